"""``tollway pos catalog import FILE.json``, run as operators run it (a process of its
own on the test gateway's database, on each backend): categories and products created
(a product's stock as its movement ``initial count``), then changed by name on a second
import (its stock set, as a movement ``import``), and every refusal a single line that
imports nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pos_client import pos_client, product, stock_movements

from tollway.testing import ProductClient, ProductClientFactory, deployment_settings

IMPORT = (sys.executable, "-m", "tollway.cli", "pos", "catalog", "import")
SIZE = {"group": "size", "options": ["S", "L"], "required": True, "prices": {"L": 150}}
FIRST = {
    "categories": [
        {"name": "Burgers", "sort_order": 1, "color": "#FF0000"},
        {"name": "Drinks", "sort_order": 2},
    ],
    "products": [
        {
            "name": "Cheeseburger",
            "price_cents": 899,
            "category": "Burgers",
            "stock_qty": 10,
            "modifiers": [SIZE],
        },
        {"name": "Cola", "price_cents": 199, "category": "Drinks", "unit": "can"},
        {"name": "Fries", "price_cents": 299, "tags": ["vegan"]},
    ],
}
SECOND = {
    "categories": [
        {"name": "Drinks", "sort_order": 0, "icon": "cup"},
        {"name": "Desserts"},
        {"name": "Burgers", "sort_order": 1, "color": "#00AA00"},
    ],
    "products": [
        {"name": "Cheeseburger", "price_cents": 949, "category": "Burgers", "stock_qty": 4},
        {"name": "Pie", "price_cents": 399, "category": "Desserts", "stock_qty": 2},
    ],
}


def import_catalog(
    pos: ProductClient, path: Path, catalog: Any, account: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``tollway pos catalog import`` of ``catalog`` (written to ``path`` as JSON, or as
    is when text) into ``account`` (the owner's store by default)."""
    path.write_text(catalog if isinstance(catalog, str) else json.dumps(catalog))
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
    settings = {**deployment_settings(pos.gateway), "plugins": "pos", "demo": "false"}
    env.update({f"TOLLWAY_{name.upper()}": str(value) for name, value in settings.items()})
    store = pos.owner.account_id if account is None else account
    return subprocess.run(
        [*IMPORT, str(path), "--account", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def catalog_of(pos: ProductClient) -> tuple[list[Any], list[Any]]:
    """The owner's categories and products as ``(name, ...)`` tuples."""
    categories = (await pos.call("GET", "/categories"))["categories"]
    names = {each["id"]: each["name"] for each in categories}
    products = (await pos.call("GET", "/products"))["products"]
    return (
        [(c["name"], c["icon"], c["color"], c["sort_order"]) for c in categories],
        [
            (p["name"], p["price_cents"], names.get(p["category_id"]), p["stock_qty"], p["unit"])
            for p in products
        ],
    )


async def test_an_import_creates_then_changes_by_name(
    product_client: ProductClientFactory, tmp_path: Path
) -> None:
    async with pos_client(product_client) as pos:
        first = import_catalog(pos, tmp_path / "catalog.json", FIRST)
        assert (first.returncode, first.stderr) == (0, "")
        assert first.stdout == "categories: 2 created, 0 updated; products: 3 created, 0 updated\n"
        assert await catalog_of(pos) == (
            [("Burgers", None, "#ff0000", 1), ("Drinks", None, None, 2)],
            [
                ("Cheeseburger", 899, "Burgers", 10, "each"),
                ("Cola", 199, "Drinks", None, "can"),
                ("Fries", 299, None, None, "each"),
            ],
        )
        [burger, _, fries] = (await pos.call("GET", "/products"))["products"]
        assert (burger["modifiers"], fries["tags"]) == ([{**SIZE, "multiple": False}], ["vegan"])

        second = import_catalog(pos, tmp_path / "catalog.json", SECOND)
        assert (second.returncode, second.stderr) == (0, "")
        assert second.stdout == "categories: 1 created, 2 updated; products: 1 created, 1 updated\n"
        assert await catalog_of(pos) == (
            [
                ("Desserts", None, None, 0),
                ("Drinks", "cup", None, 0),
                ("Burgers", None, "#00aa00", 1),
            ],
            [
                ("Cheeseburger", 949, "Burgers", 4, "each"),
                ("Cola", 199, "Drinks", None, "can"),
                ("Fries", 299, None, None, "each"),
                ("Pie", 399, "Desserts", 2, "each"),
            ],
        )
        # Changed to the file's values: the modifiers it no longer lists are gone.
        changed = await pos.call("GET", f"/products/{burger['id']}")
        assert (changed["id"], changed["modifiers"]) == (burger["id"], [])
        assert await stock_movements(pos, burger["id"]) == [
            (10, 10, "initial count", None),
            (-6, 4, "import", None),
        ]
        pie = (await pos.call("GET", "/products"))["products"][3]
        assert pie["name"] == "Pie"
        assert await stock_movements(pos, pie["id"]) == [(2, 2, "initial count", None)]
        assert await pos.call("GET", "/categories", by=pos.other) == {"categories": []}


async def test_an_unchanged_product_keeps_its_updated_at(
    product_client: ProductClientFactory, tmp_path: Path
) -> None:
    async with pos_client(product_client) as pos:
        made = await product(pos, "Fries", price_cents=299)
        entry = {"name": "Fries", "price_cents": 299}
        result = import_catalog(pos, tmp_path / "catalog.json", {"products": [entry]})
        assert (result.returncode, result.stderr) == (0, "")
        assert await pos.call("GET", f"/products/{made['id']}") == made


@pytest.mark.parametrize(
    ("catalog", "message"),
    [
        (
            {
                "categories": [{"name": "Sides"}],
                "products": [
                    {"name": "Fries", "price_cents": 299, "category": "Sides"},
                    {"name": "Margherita", "price_cents": 999, "category": "Pizza"},
                ],
            },
            "products[1]: no category named 'Pizza'",
        ),
        ("{not json", "the catalog is not JSON: "),
        ('{"products": [{"name": "Fries"}]}', "invalid catalog: "),
        ({"products": [{"name": "Fries", "price_cents": -1}]}, "invalid catalog: "),
        ({"items": []}, "invalid catalog: Object contains unknown field `items`"),
        (
            {
                "products": [
                    {"name": "Fries", "price_cents": 1},
                    {"name": " Fries", "price_cents": 2},
                ]
            },
            "the product 'Fries' is in the file twice",
        ),
        (
            {
                "categories": [{"name": "Sides"}],
                "products": [{"name": "Pie", "price_cents": 1, "modifiers": [SIZE, SIZE]}],
            },
            "products[0]: Modifier group 'size' is listed twice",
        ),
    ],
)
async def test_a_refused_import_is_one_line_and_imports_nothing(
    product_client: ProductClientFactory, tmp_path: Path, catalog: Any, message: str
) -> None:
    async with pos_client(product_client) as pos:
        result = import_catalog(pos, tmp_path / "catalog.json", catalog)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.startswith(f"tollway: {message}")
        assert result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr
        assert await catalog_of(pos) == ([], [])


async def test_an_unknown_store_is_refused(
    product_client: ProductClientFactory, tmp_path: Path
) -> None:
    async with pos_client(product_client) as pos:
        result = import_catalog(pos, tmp_path / "catalog.json", FIRST, account=999_999)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == "tollway: account 999999 not found\n"
        assert await catalog_of(pos) == ([], [])
