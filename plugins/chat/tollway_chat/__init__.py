"""The chat product: conversations, messages, contacts, agents and inboxes."""
