"""``tollway pos catalog import FILE.json``: a whole catalog in one transaction.

The file is ``{"categories": [...], "products": [...]}``: categories as
``POST /v1/pos/categories`` takes them, products as ``POST /v1/pos/products`` does but
naming their category by ``category`` (its name) instead of an id. A category or
product is matched by its name within the store: one that exists is changed to the
file's values (a product's stock is set, as a counted adjustment, when the file gives
``stock_qty``), one that does not is created. Nothing is imported unless everything is:
the first invalid entry stops the import with its place in the file.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import BadRequest, WebhookEngine
from tollway_pos import schemas
from tollway_pos.catalog import Catalog, color
from tollway_pos.live import Live
from tollway_pos.models import Category, Product
from tollway_pos.settings import PosSettings


class ImportedProduct(schemas.ProductCreate, kw_only=True, forbid_unknown_fields=True):
    category: Annotated[str, msgspec.Meta(min_length=1, max_length=100)] | None = None
    """The name of a category of the file or of the store."""


class CatalogFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    categories: list[schemas.CategoryCreate] = msgspec.field(default_factory=list)
    products: list[ImportedProduct] = msgspec.field(default_factory=list)


class Imported(msgspec.Struct, frozen=True):
    categories_created: int
    categories_updated: int
    products_created: int
    products_updated: int


def read_catalog(content: bytes) -> CatalogFile:
    """The file's catalog, or ``ValueError`` saying what is wrong and where."""
    try:
        catalog = msgspec.json.decode(content, type=CatalogFile)
    except msgspec.ValidationError as error:
        raise ValueError(f"invalid catalog: {error}") from None
    except msgspec.DecodeError as error:
        raise ValueError(f"the catalog is not JSON: {error}") from None
    for kind, names in (
        ("category", [category.name.strip() for category in catalog.categories]),
        ("product", [product.name.strip() for product in catalog.products]),
    ):
        if len(set(names)) != len(names):
            twice = next(name for name in names if names.count(name) > 1)
            raise ValueError(f"the {kind} {twice!r} is in the file twice")
    return catalog


async def import_catalog(
    session: AsyncSession,
    account_id: int,
    catalog: CatalogFile,
    *,
    settings: PosSettings,
    webhooks: WebhookEngine,
    live: Live,
) -> Imported:
    """Create or change the file's categories, then its products, in ``session``'s
    transaction."""
    store = Catalog(session, account_id, settings, webhooks, live)
    existing = dict(
        (
            await session.execute(
                select(Category.name, Category.id).where(Category.account_id == account_id)
            )
        ).all()
    )
    created = updated = 0
    for category in catalog.categories:
        name = category.name.strip()
        if name in existing:
            await session.execute(
                update(Category)
                .where(Category.id == existing[name])
                .values(
                    icon=category.icon, color=color(category.color), sort_order=category.sort_order
                )
            )
            updated += 1
        else:
            existing[name] = (await store.create_category(category)).id
            created += 1
    products = dict(
        (
            await session.execute(
                select(Product.name, Product.id).where(Product.account_id == account_id)
            )
        ).all()
    )
    products_created = products_updated = 0
    for index, product in enumerate(catalog.products):
        try:
            is_new = await _import_product(store, product, existing, products)
        except (BadRequest, ValueError) as error:
            raise ValueError(f"products[{index}]: {error}") from None
        products_created += is_new
        products_updated += not is_new
    return Imported(created, updated, products_created, products_updated)


async def _import_product(
    store: Catalog, product: ImportedProduct, categories: dict[str, str], products: dict[str, str]
) -> bool:
    """Create the product, or change the store's product of its name; whether it was new."""
    fields = msgspec.structs.asdict(product)
    category = fields.pop("category")
    if category is not None:
        if category.strip() not in categories:
            raise ValueError(f"no category named {category!r}")
        fields["category_id"] = categories[category.strip()]
    stock = fields.pop("stock_qty")
    found = products.get(product.name.strip())
    if found is None:
        await store.create_product(schemas.ProductCreate(**fields, stock_qty=stock))
        return True
    threshold = fields.pop("low_stock_threshold")
    change = schemas.ProductUpdate(**fields)
    if threshold is not None:
        change.low_stock_threshold = threshold
    await store.update_product(found, change)
    if stock is not None:
        await store.adjust_stock(found, schemas.StockAdjustment(set=stock, reason="import"))
    return False
