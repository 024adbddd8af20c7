// Package kube obtains remote hands (an `airlock tool-server`) as pods in a
// Kubernetes cluster, one set per broker session, and releases them when
// the session ends: a kube://NAMESPACE/TEMPLATE target.
//
// Two ways to get hands, chosen by what the cluster serves: a SandboxClaim
// against an agent-sandbox warm pool (extensions.agents.x-k8s.io) when its
// CRDs are installed, else a plain Pod per session built by PodSpec, the
// one function that decides the pod's security settings. Every object is
// labelled with the session and the broker that made it and annotated with
// an expiry, so Sweep can remove what a dead broker left.
//
// This package links client-go, whose package initialisation costs
// milliseconds: it is imported only by cmd/airlock-kube, never by the
// airlock binary, which re-executes itself for every sandbox.
package kube
