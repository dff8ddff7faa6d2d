"""Code usage read through the analytics product: codes generated through the code
API give the same numbers in the report's JSON, its CSV export and its PDF export."""

from __future__ import annotations

from datetime import UTC, datetime

from tollway.testing import ProductClientFactory
from tollway_analytics.testing import read_three_ways
from tollway_code.counter import GenerationCounter

REPORT_SCOPES = ["analytics:reports:read", "analytics:reports:export"]


async def test_json_csv_and_pdf_agree_with_the_codes(product_client: ProductClientFactory) -> None:
    async with product_client("code", plugins=["code", "analytics"]) as code:
        counter = code.gateway.service(GenerationCounter)
        generated = [
            ("2026-06-01 09:00", "/qr", {"data": "one"}),
            ("2026-06-01 09:05", "/qr", {"data": "two"}),
            ("2026-06-01 17:00", "/barcode", {"data": "590123412345", "format": "ean13"}),
            ("2026-06-03 08:00", "/qr", {"data": "three"}),
        ]
        for at, path, body in generated:
            moment = datetime.fromisoformat(at).replace(tzinfo=UTC)
            counter.clock = lambda moment=moment: moment
            answer = await code.client.post(f"/v1/code{path}", json=body)
            assert answer.status_code == 200, answer.text
        gateway = code.gateway
        await gateway.accounts.subscribe(code.owner.account_id, "analytics", "free")
        key = await gateway.accounts.create_key(
            code.owner.account_id, name="reports", scopes=REPORT_SCOPES
        )
        headers = {"Authorization": f"Bearer {key.key}"}
        params = {"start_date": "2026-06-01", "end_date": "2026-06-03", "tz": "UTC"}
        read = await read_three_ways(code.client, headers, "code.usage", params)

    expected = [("2026-06-01", 3, 2, 1), ("2026-06-02", 0, 0, 0), ("2026-06-03", 1, 1, 0)]
    assert read.json["summary"] == {"generated": 4, "qr": 3, "barcodes": 1}
    assert read.json["series"] == [
        {"date": day, "generated": total, "qr": qr, "barcodes": barcodes}
        for day, total, qr, barcodes in expected
    ]
    assert [tuple(row.values()) for row in read.csv] == [
        (day, str(total), str(qr), str(barcodes)) for day, total, qr, barcodes in expected
    ]
    assert list(read.csv[0]) == ["date", "generated", "qr", "barcodes"]
    lines = [line.split() for line in read.pdf_lines]
    for day, total, qr, barcodes in expected:
        assert [day, str(total), str(qr), str(barcodes)] in lines
