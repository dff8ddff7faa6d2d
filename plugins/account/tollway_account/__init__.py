"""tollway product plugin: the account and billing API at /v1/account."""
