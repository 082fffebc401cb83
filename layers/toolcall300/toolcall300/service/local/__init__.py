"""The one-machine stack: moto server, local gateway, worker, provisioning from template.yaml; nothing outside local/ imports it."""
