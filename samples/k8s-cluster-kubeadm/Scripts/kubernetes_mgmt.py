"""Placeholder for the artifact ``mgmt-drivers-kubernetes`` of this package.

Tacker runs a copy of its sample driver ``kubernetes_mgmt.py`` for hooks bound to this artifact.
healvnfm never executes this file: hooks whose artifact is named ``mgmt-drivers-kubernetes`` are
served by healvnfm's built-in management driver ``k8s-kubeadm`` (instantiate_end, terminate_end,
scale_start, scale_end, heal_start, heal_end), which runs ``Scripts/install_k8s_cluster.sh`` on the
VMs over SSH. The file only has to exist so that the package is complete.
"""

raise SystemExit("mgmt-drivers-kubernetes is served by healvnfm's built-in driver k8s-kubeadm; this file is not run")
