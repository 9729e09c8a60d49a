#!/bin/sh
# Lifecycle hook of the Sample VNF. The VNFM passes one JSON document on stdin
# ({hook, operation, request, vnfInstance, grantRequest, grant, packageDir}) and
# treats exit code 0 as success. This hook only consumes its input and logs the hook name.
input=$(cat)
hook=$(printf '%s' "$input" | sed -n 's/^{"hook":"\([a-z_]*\)".*/\1/p')
echo "sample VNF hook ${hook:-unknown}: nothing to do" >&2
exit 0
