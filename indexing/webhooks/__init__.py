"""Push webhooks from git hosts: each provider's signature scheme and push payload, and the
service that turns a verified push into a re-index (``indexing.webhooks.deliveries``)."""
