"""Example agents built on the client package (client/): run them with `.venv/bin/python -m examples.<name>`."""
