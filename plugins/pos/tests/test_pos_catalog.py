"""The catalog over HTTP: categories in their order, a product as created (every field
and each default), the refusals of a product's body, changing a product (only what is
given, ``updated_at`` only on a real change), reading one, listing the active ones with
each filter and page, full-text search on both databases, and one store never seeing
another's catalog."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from pos_client import category, pos_client, product

from tollway.testing import ProductClient, ProductClientFactory

PRODUCT_ID = re.compile(r"prod_[0-9A-Za-z]{16}")
CATEGORY_ID = re.compile(r"cat_[0-9A-Za-z]{16}")
UNKNOWN_PRODUCT = "prod_0000000000000000"
UNKNOWN_CATEGORY = "cat_0000000000000000"
SIZE = {"group": "size", "options": ["S", "L"], "required": True, "prices": {"L": 150}}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def listed(pos: ProductClient, **params: Any) -> list[str]:
    """The names ``GET /products`` answers with ``params``."""
    found = await pos.call("GET", "/products", params=params)
    return [each["name"] for each in found["products"]]


async def test_categories_are_listed_by_sort_order_then_name(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        drinks = await category(pos, "Drinks", sort_order=2, icon="cup", color="#00AAFF")
        assert CATEGORY_ID.fullmatch(drinks["id"])
        assert drinks == {
            "id": drinks["id"],
            "name": "Drinks",
            "icon": "cup",
            "color": "#00aaff",
            "sort_order": 2,
        }
        sides = await category(pos, " Sides ", sort_order=1)
        burgers = await category(pos, "Burgers", sort_order=1)
        desserts = await category(pos, "Desserts")
        assert sides["name"] == "Sides"
        assert (desserts["icon"], desserts["color"], desserts["sort_order"]) == (None, None, 0)
        listing = await pos.call("GET", "/categories")
        assert listing == {"categories": [desserts, burgers, sides, drinks]}
        assert await pos.call("GET", "/categories", by=pos.other) == {"categories": []}


async def test_a_product_echoes_every_field(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burgers = await category(pos)
        body = {
            "name": " Cheeseburger ",
            "price_cents": 899,
            "description": "Beef and cheddar",
            "category_id": burgers["id"],
            "image_url": "https://img.example.com/cheeseburger.png",
            "stock_qty": 0,
            "low_stock_threshold": 2,
            "unit": "piece",
            "discount_bps": 1000,
            "prep_minutes": 12,
            "modifiers": [SIZE],
            "tags": [" beef ", "beef", "grill"],
            "is_active": False,
        }
        created = await pos.call("POST", "/products", json=body, expect=201)
        assert PRODUCT_ID.fullmatch(created["id"])
        assert created == {
            **body,
            "id": created["id"],
            "name": "Cheeseburger",
            "currency": "usd",
            "in_stock": False,
            "modifiers": [{**SIZE, "multiple": False}],
            "tags": ["beef", "grill"],
            "created_at": created["created_at"],
            "updated_at": created["created_at"],
        }
        assert at(created["created_at"]).tzinfo is not None
        # Inactive: left out of the list, still readable by its id.
        assert await pos.call("GET", f"/products/{created['id']}") == created
        assert await listed(pos) == []


async def test_a_products_defaults(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client, settings={"low_stock_threshold": 7}) as pos:
        created = await product(pos, "Fries", price_cents=299)
        assert created == {
            "id": created["id"],
            "name": "Fries",
            "description": "",
            "price_cents": 299,
            "currency": "usd",
            "category_id": None,
            "image_url": None,
            "in_stock": True,
            "stock_qty": None,
            "low_stock_threshold": 7,
            "unit": "each",
            "discount_bps": 0,
            "prep_minutes": 0,
            "modifiers": [],
            "tags": [],
            "is_active": True,
            "created_at": created["created_at"],
            "updated_at": created["created_at"],
        }


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/products", {"name": "Fries", "price_cents": 299, "stock": 3}, "unknown field `stock`"),
        ("/products", {"name": "  ", "price_cents": 299}, "at `$.name`"),
        ("/products", {"price_cents": 299}, "missing required field `name`"),
        ("/products", {"name": "Fries", "price_cents": -1}, "`int` >= 0 - at `$.price_cents`"),
        ("/products", {"name": "Fries", "price_cents": 100_000_001}, "at `$.price_cents`"),
        ("/products", {"name": "Fries", "price_cents": 2.5}, "at `$.price_cents`"),
        ("/products", {"name": "Fries", "price_cents": 1, "stock_qty": -1}, "at `$.stock_qty`"),
        ("/products", {"name": "Fries", "price_cents": 1, "discount_bps": 10_001}, "discount_bps"),
        ("/products", {"name": "Fries", "price_cents": 1, "category_id": "7"}, "category_id"),
        ("/categories", {"name": "Sides", "color": "red"}, "at `$.color`"),
        ("/categories", {"name": "Sides", "color": "#12345"}, "at `$.color`"),
        ("/categories", {"name": ""}, "at `$.name`"),
    ],
)
async def test_what_the_schema_refuses(
    product_client: ProductClientFactory, path: str, body: dict[str, Any], where: str
) -> None:
    async with pos_client(product_client) as pos:
        error = await pos.call("POST", path, json=body, expect=400)
        assert error["detail"].startswith("Invalid request body: ")
        assert where in error["detail"]
        assert await pos.call("GET", "/categories") == {"categories": []}
        assert await pos.call("GET", "/products") == {"products": [], "total": 0, "offset": 0}


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        (
            {"modifiers": [SIZE, {"group": "size", "options": ["M"]}]},
            "Modifier group 'size' is listed twice",
        ),
        (
            {"modifiers": [{"group": "sauce", "options": ["ketchup", "mayo", "ketchup"]}]},
            "Modifier group 'sauce' lists an option twice",
        ),
        (
            {"modifiers": [{"group": "size", "options": ["S", "L"], "prices": {"XL": 300}}]},
            "Modifier group 'size' prices 'XL': not an option",
        ),
        ({"category_id": UNKNOWN_CATEGORY}, f"Category {UNKNOWN_CATEGORY} not found"),
    ],
)
async def test_what_the_catalog_refuses(
    product_client: ProductClientFactory, fields: dict[str, Any], detail: str
) -> None:
    async with pos_client(product_client) as pos:
        body = {"name": "Cheeseburger", "price_cents": 899, **fields}
        error = await pos.call("POST", "/products", json=body, expect=400)
        assert error == {"detail": detail}
        assert await pos.call("GET", "/products") == {"products": [], "total": 0, "offset": 0}


async def test_another_stores_category_is_unknown(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        body = {"name": "Burgers"}
        theirs = await pos.call("POST", "/categories", json=body, expect=201, by=pos.other)
        body = {"name": "Cheeseburger", "price_cents": 899, "category_id": theirs["id"]}
        error = await pos.call("POST", "/products", json=body, expect=400)
        assert error == {"detail": f"Category {theirs['id']} not found"}
        mine = await product(pos)
        patch = {"category_id": theirs["id"]}
        error = await pos.call("PATCH", f"/products/{mine['id']}", json=patch, expect=400)
        assert error == {"detail": f"Category {theirs['id']} not found"}


async def test_patch_changes_only_the_given_fields(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burgers = await category(pos)
        image = "https://img.example.com/c.png"
        created = await product(
            pos, category_id=burgers["id"], image_url=image, tags=["beef"], stock_qty=4
        )
        path = f"/products/{created['id']}"
        repriced = await pos.call("PATCH", path, json={"price_cents": 949, "modifiers": [SIZE]})
        modifiers = [{**SIZE, "multiple": False}]
        assert repriced == {
            **created,
            "price_cents": 949,
            "modifiers": modifiers,
            "updated_at": repriced["updated_at"],
        }
        assert at(repriced["updated_at"]) > at(created["updated_at"])
        # The values it already has (the name as stored once stripped): no change at all.
        same = {"name": " Cheeseburger ", "price_cents": 949, "modifiers": [SIZE], "tags": ["beef"]}
        assert await pos.call("PATCH", path, json=same) == repriced
        assert await pos.call("PATCH", path, json={}) == repriced
        cleared = await pos.call("PATCH", path, json={"category_id": None, "image_url": None})
        assert cleared == {
            **repriced,
            "category_id": None,
            "image_url": None,
            "updated_at": cleared["updated_at"],
        }
        assert at(cleared["updated_at"]) > at(repriced["updated_at"])
        assert await pos.call("GET", path) == cleared


async def test_patch_refusals(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        created = await product(pos, stock_qty=4)
        path = f"/products/{created['id']}"
        error = await pos.call("PATCH", path, json={"stock_qty": 9}, expect=400)
        assert error == {
            "detail": "Invalid request body: Object contains unknown field `stock_qty`"
        }
        error = await pos.call("PATCH", path, json={"name": None}, expect=400)
        assert error["detail"].endswith("at `$.name`")
        error = await pos.call("PATCH", path, json={"low_stock_threshold": None}, expect=400)
        assert error["detail"].endswith("at `$.low_stock_threshold`")
        assert await pos.call("GET", path) == created


async def test_unknown_and_other_stores_products(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        theirs = await product(pos, by=pos.other)
        for product_id in (UNKNOWN_PRODUCT, theirs["id"]):
            missing = {"detail": f"Product {product_id} not found"}
            path = f"/products/{product_id}"
            assert await pos.call("GET", path, expect=404) == missing
            assert await pos.call("PATCH", path, json={"name": "Mine"}, expect=404) == missing
            assert await pos.call("GET", f"{path}/stock", expect=404) == missing
        assert await pos.call("GET", f"/products/{theirs['id']}", by=pos.other) == theirs
        for malformed in ("prod_1", "cat_0000000000000000", "prod_000000000000000!"):
            error = await pos.call("GET", f"/products/{malformed}", expect=400)
            assert error["detail"].startswith("Invalid request: product_id: ")
            await pos.call("PATCH", f"/products/{malformed}", json={}, expect=400)


async def test_listing_filters_and_pages(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burgers, drinks = await category(pos), await category(pos, "Drinks")
        await product(pos, "Cheeseburger", category_id=burgers["id"], stock_qty=3)
        await product(pos, "Veggie burger", category_id=burgers["id"], stock_qty=0)
        await product(pos, "Bacon burger", category_id=burgers["id"], is_active=False)
        await product(pos, "Cola", category_id=drinks["id"])
        await product(pos, "Fries")
        assert await listed(pos) == ["Cheeseburger", "Cola", "Fries", "Veggie burger"]
        assert await listed(pos, category_id=burgers["id"]) == ["Cheeseburger", "Veggie burger"]
        # Untracked products are always in stock.
        assert await listed(pos, in_stock="true") == ["Cheeseburger", "Cola", "Fries"]
        assert await listed(pos, in_stock="false") == ["Veggie burger"]
        assert await listed(pos, in_stock="true", category_id=burgers["id"]) == ["Cheeseburger"]
        page = await pos.call("GET", "/products", params={"limit": 2, "offset": 1})
        assert [each["name"] for each in page["products"]] == ["Cola", "Fries"]
        assert (page["total"], page["offset"]) == (4, 1)
        beyond = await pos.call("GET", "/products", params={"offset": 10})
        assert beyond == {"products": [], "total": 4, "offset": 10}
        assert await listed(pos, category_id=UNKNOWN_CATEGORY) == []
        for params in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"in_stock": "maybe"}):
            await pos.call("GET", "/products", params=params, expect=400)


async def test_another_store_sees_none_of_the_catalog(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        burgers = await category(pos)
        await product(pos, "Cheeseburger", category_id=burgers["id"], stock_qty=3)
        assert await pos.call("GET", "/products", by=pos.other) == {
            "products": [],
            "total": 0,
            "offset": 0,
        }
        assert await listed(pos, search="chee") == ["Cheeseburger"]
        found = await pos.call("GET", "/products", params={"search": "chee"}, by=pos.other)
        assert found["products"] == []
        assert await pos.call("GET", "/inventory", by=pos.other) == {"inventory": []}


async def searchable(pos: ProductClient) -> dict[str, Any]:
    """Products to search: words in names and descriptions, one with accents."""
    return {
        "burger": await product(pos, "Cheese Burger", description="Beef and cheddar"),
        "cake": await product(pos, "Cheesecake", description="Baked New York style"),
        "wrap": await product(pos, "Veggie Wrap", description="Grilled halloumi, peppers"),
        "eclair": await product(pos, "Éclair au café", description="Choux pastry"),
        "hidden": await product(pos, "Cheese toastie", is_active=False),
    }


async def test_search_finds_word_prefixes_of_name_and_description(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        await searchable(pos)
        assert await listed(pos, search="chee") == ["Cheese Burger", "Cheesecake"]
        assert await listed(pos, search="CHEDD") == ["Cheese Burger"]
        assert await listed(pos, search="halloumi") == ["Veggie Wrap"]
        assert await listed(pos, search="york") == ["Cheesecake"]
        # Every word, in any order; a prefix of a word, not a piece of one.
        assert await listed(pos, search="burg chee") == ["Cheese Burger"]
        assert await listed(pos, search="chee, wrap!") == []
        assert await listed(pos, search="urger") == []
        assert await listed(pos, search="cheeseburger") == []
        # Accented words are found written as stored, in any case, on both databases.
        assert await listed(pos, search="ÉCLAIR") == ["Éclair au café"]
        assert await listed(pos, search="café") == ["Éclair au café"]
        found = await pos.call("GET", "/products", params={"search": "chee", "limit": 1})
        assert [each["name"] for each in found["products"]] == ["Cheese Burger"]
        assert found["total"] == 2


async def test_search_splits_words_as_both_databases_do(
    product_client: ProductClientFactory,
) -> None:
    """A word is a run of letters and digits on both databases, whatever joins it to
    the next: PostgreSQL's parser must not keep ``Tea/Coffee`` or ``burger.com`` whole."""
    async with pos_client(product_client) as pos:
        await product(pos, "Tea/Coffee", description="Refills at burger.com")
        await product(pos, "Coca-Cola", description="Salt&Vinegar")
        assert await listed(pos, search="cola") == ["Coca-Cola"]
        assert await listed(pos, search="vinegar") == ["Coca-Cola"]
        assert await listed(pos, search="coffee") == ["Tea/Coffee"]
        assert await listed(pos, search="burger") == ["Tea/Coffee"]


@pytest.mark.parametrize("search", ["!!!", " ", "-- ?", "_", "'\"*:&|()"])
async def test_a_search_without_words_finds_nothing(
    product_client: ProductClientFactory, search: str
) -> None:
    async with pos_client(product_client) as pos:
        await searchable(pos)
        found = await pos.call("GET", "/products", params={"search": search})
        assert found == {"products": [], "total": 0, "offset": 0}


async def test_search_follows_a_rename(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        made = await searchable(pos)
        path = f"/products/{made['wrap']['id']}"
        await pos.call("PATCH", path, json={"name": "Falafel Wrap", "description": "Chickpeas"})
        assert await listed(pos, search="vegg") == []
        assert await listed(pos, search="halloumi") == []
        assert await listed(pos, search="falaf chick") == ["Falafel Wrap"]
        await pos.call("PATCH", path, json={"is_active": False})
        assert await listed(pos, search="falaf") == []
        # A change of another field leaves the words found.
        await pos.call("PATCH", path, json={"is_active": True, "price_cents": 1})
        assert await listed(pos, search="falaf") == ["Falafel Wrap"]
