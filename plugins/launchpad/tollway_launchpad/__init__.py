"""tollway's subscription billing product: a workspace's plans, customers and
subscriptions at /v1/launchpad, and the hosted checkout page."""
