"""The sales summary read through the analytics product: orders placed through the
point of sale's API give the same numbers in the report's JSON, its CSV export and its
PDF export."""

from __future__ import annotations

from datetime import UTC, datetime

from pos_client import order, pos_client, product
from sqlalchemy import update

from tollway.testing import ProductClientFactory
from tollway_analytics.testing import read_three_ways
from tollway_pos.models import Order, OrderLine

REPORT_SCOPES = ["analytics:reports:read", "analytics:reports:export"]


async def test_json_csv_and_pdf_agree_with_the_orders(product_client: ProductClientFactory) -> None:
    async with pos_client(
        product_client, plugins=["pos", "analytics"], settings={"currency": "usd"}
    ) as pos:
        a = await product(pos, "A", price_cents=1001)
        b = await product(pos, "B", price_cents=250)
        placed = [
            ("2026-03-02 09:00", [{"product_id": a["id"], "qty": 1}]),  # 10.01
            ("2026-03-02 18:00", [{"product_id": b["id"], "qty": 2}]),  # 5.00
            (
                "2026-03-04 12:00",
                [{"product_id": a["id"], "qty": 1}, {"product_id": b["id"], "qty": 1}],
            ),
            ("2026-03-04 13:00", [{"product_id": a["id"], "qty": 5}]),  # cancelled below
        ]
        ids = []
        for at, items in placed:
            made = await order(pos, items)
            ids.append(made["id"])
            when = datetime.fromisoformat(at).replace(tzinfo=UTC)
            async with pos.gateway.database.transaction() as session:
                await session.execute(
                    update(Order).where(Order.id == made["id"]).values(created_at=when)
                )
                await session.execute(
                    update(OrderLine)
                    .where(OrderLine.order_id == made["id"])
                    .values(created_at=when)
                )
        await pos.call("PATCH", f"/orders/{ids[-1]}", json={"status": "cancelled"})

        gateway = pos.gateway
        await gateway.accounts.subscribe(pos.owner.account_id, "analytics", "pro")
        key = await gateway.accounts.create_key(
            pos.owner.account_id, name="reports", scopes=REPORT_SCOPES
        )
        headers = {"Authorization": f"Bearer {key.key}"}
        params = {"start_date": "2026-03-01", "end_date": "2026-03-05", "tz": "UTC"}
        read = await read_three_ways(pos.client, headers, "pos.sales_summary", params)

    # 10.01 + 5.00 on the 2nd, 12.51 on the 4th; the cancelled order left out.
    days = {"2026-03-02": (1501, 2), "2026-03-04": (1251, 1)}
    expected = [(f"2026-03-0{n}", *days.get(f"2026-03-0{n}", (0, 0))) for n in range(1, 6)]
    assert read.json["currency"] == "usd"
    assert read.json["summary"] == {
        "total_revenue": 27.52,
        "total_orders": 3,
        "average_order_value": 9.17,  # 2752 / 3 = 917.33 cents
    }
    assert read.json["series"] == [
        {"date": day, "revenue": cents / 100, "orders": orders} for day, cents, orders in expected
    ]
    assert read.csv == [
        {
            "date": day,
            "revenue_cents": str(cents),
            "revenue": f"{cents / 100:.2f}",
            "orders": str(orders),
        }
        for day, cents, orders in expected
    ]
    for day, cents, orders in expected:
        assert [day, f"{cents / 100:.2f}", str(orders)] in [line.split() for line in read.pdf_lines]
    text = "\n".join(read.pdf_lines)
    for shown in ("$27.52", "$9.17", "2026-03-01 to 2026-03-05, UTC, by day"):
        assert shown in text
