// Command kube-apiserver is the upstream API server, built from the pinned k8s.io/kubernetes module
// so the test harness runs the real thing without downloading prebuilt binaries.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
