"""The linear symbologies the renderer draws: id, name, description, example, and the
step that checks the data and builds the symbol. Products list these in their catalogs."""

from __future__ import annotations

from dataclasses import dataclass

from tollway_render.barcodes import numbers, text
from tollway_render.barcodes.prepared import Prepare

__all__ = ["LINEAR_TYPES", "LinearType"]


@dataclass(frozen=True, slots=True)
class LinearType:
    """One linear symbology; ``id`` is the ``format`` of a :class:`BarcodeRequest`."""

    id: str
    name: str
    description: str
    example: str
    """Data that renders and decodes, for catalogs and tests."""
    prepare: Prepare


LINEAR_TYPES: tuple[LinearType, ...] = (
    LinearType(
        "ean13",
        "EAN-13",
        "European/International Article Number, 13 digits; the 13th (check digit) is "
        "computed when 12 digits are sent and verified when 13 are.",
        "5901234123457",
        numbers.prepare_ean13,
    ),
    LinearType(
        "ean8",
        "EAN-8",
        "Short EAN for small packages: 7 digits plus check digit.",
        "96385074",
        numbers.prepare_ean8,
    ),
    LinearType(
        "upca",
        "UPC-A",
        "Universal Product Code (North America): 11 digits plus check digit.",
        "036000291452",
        numbers.prepare_upca,
    ),
    LinearType(
        "code128",
        "Code 128",
        "Compact alphanumeric barcode for any ASCII text (up to 128 characters here).",
        "Tollway-128",
        text.prepare_code128,
    ),
    LinearType(
        "code39",
        "Code 39",
        "Alphanumeric barcode: 0-9, upper-case A-Z, space and - . $ / + % "
        "(standard Code 39, no check character is added; a scanner set to Full ASCII "
        "reads e.g. +Y as y).",
        "TOLLWAY-39",
        text.prepare_code39,
    ),
    LinearType(
        "itf",
        "ITF (Interleaved 2 of 5)",
        "Numeric barcode for an even number of digits, common on cartons.",
        "12345670",
        text.prepare_itf,
    ),
    LinearType(
        "isbn13",
        "ISBN-13",
        "Book number (978/979 prefix) as an EAN-13; hyphens are allowed.",
        "978-0-306-40615-7",
        numbers.prepare_isbn13,
    ),
    LinearType(
        "isbn10",
        "ISBN-10",
        "Legacy 10-character book number, encoded as its 978 EAN-13; hyphens are allowed.",
        "0-306-40615-2",
        numbers.prepare_isbn10,
    ),
    LinearType(
        "issn",
        "ISSN",
        "Serial publication number, encoded as the EAN-13 977 + 7 digits + 00 + check digit.",
        "0317-8471",
        numbers.prepare_issn,
    ),
    LinearType(
        "pzn",
        "PZN",
        "German pharmaceutical number, encoded as PZN8 (Code 39 of '-' + 8 digits); "
        "8 digits, or a legacy PZN7 (6 digits, or 7 with check digit) which gets a leading 0.",
        "12345678",
        numbers.prepare_pzn,
    ),
    LinearType(
        "jan",
        "JAN",
        "Japanese Article Number: an EAN-13 with prefix 450-459 or 490-499.",
        "4901234567894",
        numbers.prepare_jan,
    ),
    LinearType(
        "ean14",
        "EAN-14 (GTIN-14)",
        "14-digit trade item number for cases and pallets, encoded as GS1-128 with "
        "application identifier (01).",
        "15400141288763",
        numbers.prepare_ean14,
    ),
    LinearType(
        "gs1_128",
        "GS1-128",
        "Code 128 with GS1 application identifiers, written without parentheses "
        "(e.g. 01 + GTIN-14, 17 + YYMMDD, 10 + batch); separate a variable-length value "
        "from the next identifier with FNC1 (\\u00f1 or \\u001d).",
        "01095011015300031726123110ABC123",
        text.prepare_gs1_128,
    ),
    LinearType(
        "codabar",
        "Codabar (NW-7)",
        "Numeric barcode with start/stop characters A-D, used by libraries and blood banks.",
        "A40156B",
        text.prepare_codabar,
    ),
)
"""In the order catalogs list them."""
