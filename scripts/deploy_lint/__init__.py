"""Static checks for sluice's deployment files: docker/Dockerfile, the Kubernetes manifests, the
compose example, and every shipped sluice config (through `sluice validate`).

No container engine or cluster is needed: each check reads files, and runs the sluice binary only
to validate configs. Entry point: scripts/lint_deploy.py.
"""
