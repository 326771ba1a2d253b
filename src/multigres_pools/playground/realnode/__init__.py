"""A real Kubernetes node on this machine (containerd, runc, CNI, kubelet and add-ons): node.py.
Light on purpose: preflight.py is imported by CLIs before anything heavy."""
