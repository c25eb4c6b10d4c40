"""Building the project's container images without a Docker daemon (hack/images.py is the entry point)."""
