"""The one-machine stack: local gateway, worker, state folder, names from template.yaml; nothing outside local/ imports it."""
