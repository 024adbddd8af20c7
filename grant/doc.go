// Package grant owns the grant: what one session's tool calls may touch. A
// grant is loaded from TOML (Load, Parse) or built from command-line values
// (FromFlags, Default), validated once, and resolved once: every granted path
// has its symlinks resolved and is checked to be safe to mount before any call
// runs. After that, checking a call (Grant.Check) is pure code with no I/O but
// the resolution of the call's own paths, so it is table-tested.
//
// # Keys
//
// Every key is optional; unknown keys are errors. Each error is an *Error
// naming the file, line and key, e.g.
//
//	grant.toml:12: limits.memory: "12XB" is not a size
//
// [paths]
//
//   - read_write, read_only: lists of trees or files, relative to the grant
//     file's directory (the working directory for flags); one that starts
//     with "~" is refused, since nothing expands it. Each is resolved
//     once, symlinks included, and must exist. "/", /proc, /sys and /dev are
//     never granted; /etc, /usr, /bin, /sbin, /lib*, /boot and /run are
//     never granted read-write, nor /var and /home themselves; $TMPDIR is
//     never granted, and is hidden in a tree that holds it. Grants may
//     nest; the most specific one rules a path.
//   - deny: sub-paths of granted trees hidden from the sandbox and refused to
//     every tool, existing or not. A denied path wins over any grant. In
//     every home directory the grant reaches, the user's existing
//     credential stores (CredentialTable: .ssh, .aws, .netrc, ...) are
//     denied too, unless a granted path is one of them or lies inside it.
//   - writable_protected: protected names (see below) the sandbox may write.
//
// Protected paths stay read-only inside read-write trees, whether or not they
// exist yet: the tree's repository's hooks, config, config.worktree,
// commondir and modules (the rest of .git stays writable so commits work; a
// missing .git is held whole); every nested repository's .git; shell rc
// files, .envrc, .gitconfig, .gitmodules, package managers' rc files and
// editor and agent settings anywhere; a home directory's .ssh, .config/git
// and similar. ProtectedTable lists them with what reads each;
// docs/protected-paths.md says exactly what holds where.
//
// [network]
//
//   - hosts: exact names and "*.suffix" patterns, each with an optional
//     ":port" (80 and 443 without one). Names are normalised (lower case, one
//     trailing dot dropped, IDNA to ASCII) and matched label by label:
//     "*.example.com" matches a.example.com and a.b.example.com, never
//     example.com or evilexample.com. "*", a single-label suffix such as
//     "*.com", any other public suffix ("*.co.uk", "*.github.io": anyone
//     can have a name under one), "a.*", empty labels, localhost, and names that read as numeric
//     addresses ("2130706433", "127.1") are refused. An IP literal must be
//     public and canonical, and matches only itself.
//   - private: the only way a non-public address is reached: IPs, CIDRs,
//     or names whose addresses may be private. Each entry is a risk (Risks).
//   - plain_http: host patterns where http_fetch may use http://.
//
// [limits] and [tools.NAME]
//
// time (a Go duration), memory, processes, output, file_size and tmp (sizes:
// bytes or "64MiB", "1GiB", "512KB"; see ParseSize). [limits] applies to every
// tool over DefaultLimits; [tools.NAME] overrides it for one tool.
//
// unenforced (in [limits] only) says what a call does when the host cannot
// enforce its memory or process limit (on Linux: the user may manage no
// cgroup): "refuse" (the default) refuses it with the reason and the fix;
// "allow" runs it, and its result names the limits that did not hold.
// Every call has both limits (DefaultLimits when the grant sets none).
//
// [tools]
//
//   - enabled: the tools calls may use (ToolNames). Without it: every tool,
//     with http_fetch only when the grant names hosts or private addresses.
//
// [secrets.NAME]
//
//   - from: "env:VAR" or "file:PATH" (relative to the grant file; a file the
//     sandbox could read through the grant is refused).
//   - tools: enabled tools whose calls may carry the secret.
//   - hosts: host patterns it may be sent to, each allowed by network.hosts or
//     network.private.
//   - header, format: where it goes; "Authorization" and "Bearer {value}" by
//     default.
//
// The grant names a secret's source, never its value. examples/grant.toml in
// the repository is a commented grant with every key.
package grant
