"""The checks on sluice's deployment files that no standard tool makes (the rest is yamllint's
and podman's job): the admin port, the shutdown timing and the runtime packages, each against
the sluice config or binary it must agree with. Entry point: scripts/lint_deploy.py.
"""
