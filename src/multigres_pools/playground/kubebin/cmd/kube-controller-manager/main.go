// Command kube-controller-manager is the upstream controller manager (garbage collector, disruption
// controller, ...), built from the same pinned module as the API server.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
