// Command airlock-kube is the helper through which airlock reaches remote
// hands in a Kubernetes cluster (--remote kube://NAMESPACE/TEMPLATE). It
// holds the Kubernetes client, which stays out of the airlock binary: every
// sandbox airlock starts re-executes that binary, and client-go's package
// initialisation would cost each one milliseconds. See docs/kubernetes.md.
//
//	airlock-kube connect REQUEST   relay one broker connection (airlock spawns this)
//	airlock-kube release REQUEST   end the broker's session: delete its Secret, policy, workspace claim and pods
//	airlock-kube doctor [--json] [--runtime-class RC] [--pod-security P] kube://NAMESPACE/TEMPLATE
//	airlock-kube sweep kube://NAMESPACE/TEMPLATE
package main

import (
	"context"
	"os"

	"github.com/airlockhq/airlock/internal/kube"
)

func main() {
	os.Exit(kube.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
