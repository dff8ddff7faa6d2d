"""What the chat product is: its descriptor, the scopes of its keys, the webhook events
it emits and its default plans. Routes, service and plugin take them from here."""

from __future__ import annotations

from tollway import Plan, Product

PRODUCT = Product(name="chat", prefix="/v1/chat", title="Chat", contract="chat.yaml")

CONVERSATIONS_READ = "chat:conversations:read"
CONVERSATIONS_WRITE = "chat:conversations:write"
MESSAGES_READ = "chat:messages:read"
MESSAGES_WRITE = "chat:messages:write"
CONTACTS_READ = "chat:contacts:read"
CONTACTS_WRITE = "chat:contacts:write"
AGENTS_READ = "chat:agents:read"
AGENTS_WRITE = "chat:agents:write"
INBOXES_READ = "chat:inboxes:read"
SCOPES = {
    CONVERSATIONS_READ: "List and read chat conversations",
    CONVERSATIONS_WRITE: "Start chat conversations, change their status and agent",
    MESSAGES_READ: "Read the messages of chat conversations",
    MESSAGES_WRITE: "Send messages and private notes in chat conversations",
    CONTACTS_READ: "List, search and read chat contacts",
    CONTACTS_WRITE: "Create chat contacts",
    AGENTS_READ: "List chat agents",
    AGENTS_WRITE: "Create chat agents",
    INBOXES_READ: "List chat inboxes",
}

CONVERSATION_CREATED = "conversation.created"
CONVERSATION_UPDATED = "conversation.updated"
MESSAGE_CREATED = "message.created"
CONTACT_CREATED = "contact.created"
EVENTS = {
    CONVERSATION_CREATED: "A chat conversation was started",
    CONVERSATION_UPDATED: "A chat conversation's status or assigned agent changed",
    MESSAGE_CREATED: "A message or private note was added to a chat conversation",
    CONTACT_CREATED: "A chat contact was created",
}

PLANS = (
    Plan("free", requests_per_day=1_000, rank=0, description="Try chat out"),
    Plan("pro", requests_per_day=50_000, rank=1, description="A support team"),
    Plan("business", requests_per_day=500_000, rank=2, description="Several support teams"),
)
