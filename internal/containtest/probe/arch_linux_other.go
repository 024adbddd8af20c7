//go:build linux && !amd64

package main

func archCalls() []call { return nil }
