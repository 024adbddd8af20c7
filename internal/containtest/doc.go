// Package containtest is the containment suite every sandbox backend must
// pass: the hostile cases of the project's threat list (shared with the
// native backend's own tests) driven as real tool calls through a real
// broker session, with assertions about the security property, not the
// mechanism, so the native sandbox, Podman, remote hands and Kubernetes
// hands are held to the same outcomes. A backend's test calls Run with a
// function that opens a session over it for a grant the suite builds.
//
// The suite is Linux-only (every backend it tests builds Linux
// sandboxes); on other platforms the package is empty.
package containtest
