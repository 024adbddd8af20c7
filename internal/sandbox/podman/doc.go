// Package podman is a sandbox backend that runs each call in a fresh Podman
// container from an image pinned by digest. The container is locked down
// (no network, read-only root, no capabilities, no_new_privs, seccomp, a
// user namespace, cgroup limits) and mounts only the grant's paths, staged
// by the broker as idmapped mounts so container root writes as the tree's
// owner without being host root. The tool runner inside is the static
// airlock binary, mounted read-only and started in the mode of package
// inside, so any image works, even one without a shell.
//
// The argument list Podman receives is built by one function, Args, and
// pinned by golden files under testdata/.
package podman
