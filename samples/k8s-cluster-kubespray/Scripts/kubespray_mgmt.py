"""Placeholder for the artifact ``mgmt-drivers-kubespray`` of this package.

Tacker runs a copy of its sample driver ``kubespray_mgmt.py`` for hooks bound to this artifact.
healvnfm never executes this file: hooks whose artifact is named ``mgmt-drivers-kubespray`` are
served by healvnfm's built-in management driver ``k8s-kubespray`` (instantiate_end, terminate_end,
scale_start, scale_end, heal_start, heal_end), which runs Kubespray's playbooks on the Ansible
server named in the request and configures the external load balancer itself. The file only has
to exist so that the package is complete.
"""

raise SystemExit("mgmt-drivers-kubespray is served by healvnfm's built-in driver k8s-kubespray; this file is not run")
