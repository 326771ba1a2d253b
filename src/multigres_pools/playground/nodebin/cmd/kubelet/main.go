// Command kubelet is the upstream node agent, built from the same pinned k8s.io/kubernetes module as
// the harness's API server, so the real node runs pods through containerd without prebuilt binaries.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
