package tool

// all is every tool, registered explicitly in a fixed order.
var all = []*Def{readFile, writeFile, editFile, glob, grep, shell, backgroundCommand, httpFetch, webSearch}
