#!/usr/bin/python3
# heat-engine for the VNFM's real-Heat test stage: Debian 12's heat-engine (Heat 19) plus one
# in-memory correction. scripts/real-heat/setup.sh installs this file as
# /usr/local/lib/real-heat/heat-engine-launcher and starts heat-engine through it. No file of the
# Debian packages is modified.
#
# The problem: Debian 12's python3-oslo.messaging (14.0.3-0+deb12u1, a security update) strips
# every notification context down to a few "safe" keys and rebuilds it with
# `type(ctxt).from_dict(...)`. A resource signal (OS::Heat::ScalingPolicy) runs with Heat's
# StoredContext, whose `roles` property logs in to Keystone on first use. The rebuilt copy has no
# trust, token or password left, so reading its roles while serialising the notification raises
# AuthorizationFailure: the signal ends as SIGNAL_FAILED "Authorization failed." and the group is
# never resized (the signal API call itself still answers 200). This happens even with the
# notification driver set to noop, because the copy is made before the driver is consulted.
#
# The correction: the stripped copy of a StoredContext is built as a plain Heat RequestContext,
# which keeps the roles it is given instead of logging in again. Everything else, including the
# StoredContext Heat itself uses to act for the stack owner, is untouched.
import sys

from heat.cmd.engine import main  # first: it monkey-patches the standard library for eventlet
from heat.common import context as heat_context
from oslo_messaging.notify import notifier as oslo_notifier

_strip_context = oslo_notifier._sanitize_context


def _strip_context_keeping_roles(ctxt):
    if isinstance(ctxt, heat_context.StoredContext):
        # The original (with its credentials) serialises fine; a dict in gives a dict out.
        return heat_context.RequestContext.from_dict(_strip_context(ctxt.to_dict()))
    return _strip_context(ctxt)


oslo_notifier._sanitize_context = _strip_context_keeping_roles

if __name__ == "__main__":
    sys.exit(main())
