"""Contacts over HTTP: creation rules, unique emails, E.164 phones, search, counts,
pagination and tenant isolation."""

from __future__ import annotations

from typing import Any

import pytest
from chat_client import CHAT, inbox, open_chat

from tollway.testing import ProductClientFactory


async def test_create_and_get(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        created = await chat.post(
            "/contacts", {"name": "  Ada Lovelace ", "email": "ada@example.com", "phone": "+4420"}
        )
        assert created == {
            "id": created["id"],
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "phone": "+4420",
            "conversation_count": 0,
            "created_at": created["created_at"],
        }
        assert await chat.get(f"/contacts/{created['id']}") == created
        bare = await chat.post("/contacts", {"name": "Anon"})
        assert (bare["email"], bare["phone"]) == (None, None)
        assert (await chat.post("/contacts", {"name": "Anon 2"}))["email"] is None


async def test_unique_email_per_account(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        await chat.contact("Ada")
        error = await chat.post(
            "/contacts", {"name": "Other", "email": "ada@example.com"}, expect=409
        )
        assert error == {"detail": "A contact with email ada@example.com already exists"}
        response = await chat.client.post(
            f"{CHAT}/contacts",
            json={"name": "Ada", "email": "ada@example.com"},
            headers=chat.other.headers,
        )
        assert response.status_code == 201
        assert (await chat.get("/contacts"))["total"] == 1


@pytest.mark.parametrize(
    "body",
    [
        {"name": ""},
        {"name": "   "},
        {"name": "a\x00"},
        {"name": "Ada", "phone": "020 7123 4567"},
        {"name": "Ada", "phone": "+0123"},
        {"name": "Ada", "phone": "+1234567890123456"},
        {"name": "Ada", "email": "not-an-email"},
        {"name": "Ada", "email": "a\x00@b.c"},
        {"email": "a@b.c"},
        {"name": "Ada", "extra": True},
    ],
)
async def test_refuses_invalid_contacts(
    product_client: ProductClientFactory, body: dict[str, Any]
) -> None:
    async with open_chat(product_client) as chat:
        assert set(await chat.post("/contacts", body, expect=400)) == {"detail"}
        assert (await chat.get("/contacts"))["total"] == 0


async def test_search_and_pagination(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        ada = await chat.post(
            "/contacts", {"name": "Ada Lovelace", "email": "ada@analytical.org", "phone": "+4411"}
        )
        grace = await chat.post("/contacts", {"name": "Grace", "email": "g_h@navy.mil"})
        percent = await chat.post("/contacts", {"name": "100% Real", "phone": "+15550100"})

        async def found(q: str) -> list[int]:
            return [item["id"] for item in (await chat.get("/contacts", q=q))["data"]]

        assert await found("LOVE") == [ada["id"]]
        assert await found("ANALYTICAL.") == [ada["id"]]
        assert await found("+44") == [ada["id"]]
        assert await found("555") == [percent["id"]]
        assert await found("%") == [percent["id"]]
        assert await found("_") == [grace["id"]]
        assert await found("\\") == []
        assert await found("a") == [ada["id"], grace["id"], percent["id"]]
        assert await found("") == [ada["id"], grace["id"], percent["id"]]
        assert (await chat.get("/contacts", q="zzz")) == {"data": [], "total": 0}
        await chat.get("/contacts", q="a\x00", expect=400)

        for number in range(30):
            await chat.post("/contacts", {"name": f"Bulk {number}"})
        first = await chat.get("/contacts")
        assert first["total"] == 33
        assert len(first["data"]) == 25
        assert first["data"][0]["id"] == ada["id"]
        assert len((await chat.get("/contacts", page=2))["data"]) == 8
        assert len((await chat.get("/contacts", limit=100))["data"]) == 33
        bulk = await chat.get("/contacts", q="bulk", limit=10, page=3)
        assert bulk["total"] == 30
        assert [item["name"] for item in bulk["data"]] == [f"Bulk {n}" for n in range(20, 30)]
        for params in ({"limit": 101}, {"limit": 0}, {"page": 0}, {"q": "x" * 201}):
            await chat.get("/contacts", expect=400, **params)


async def test_conversation_count(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        ada = await chat.contact("Ada")
        grace = await chat.contact("Grace")
        for _ in range(3):
            await chat.conversation(box, ada["id"])
        await chat.conversation(box, grace["id"])
        counts = {
            item["id"]: item["conversation_count"] for item in (await chat.get("/contacts"))["data"]
        }
        assert counts == {ada["id"]: 3, grace["id"]: 1}
        assert (await chat.get(f"/contacts/{ada['id']}"))["conversation_count"] == 3


async def test_other_accounts_contacts_are_not_found(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        ada = await chat.contact("Ada")
        response = await chat.client.get(f"{CHAT}/contacts/{ada['id']}", headers=chat.other.headers)
        assert response.status_code == 404
        assert response.json() == {"detail": f"Contact {ada['id']} not found"}
        listing = await chat.client.get(f"{CHAT}/contacts", headers=chat.other.headers)
        assert listing.json() == {"data": [], "total": 0}
        await chat.get("/contacts/999", expect=404)
