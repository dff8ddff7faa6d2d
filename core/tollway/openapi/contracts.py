"""Where the installed products' contracts are, and reading them.

A product plugin ships its contract as package data: ``Product(contract="code.yaml")``
registered by a plugin whose module lives in package ``tollway_code`` names the file
``code.yaml`` of ``tollway_code.contracts`` (``tollway_code/contracts/code.yaml``). The
core ships the components every contract shares as ``tollway/contracts/common.yaml``. In
this repository both are symbolic links to the files in the top-level ``contracts/``
folder, which stays the one place they are edited; a built wheel holds the files
themselves. Found through the import system, the folder may also be mapped elsewhere
(``package-dir``), as the plugin tutorial does.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from tollway.gateway import Gateway
from tollway.openapi.document import COMMON
from tollway.registry import Product, RegistrationError

CONTRACTS_FOLDER = "contracts"

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _contracts_folders(module: ModuleType) -> tuple[list[Traversable], str]:
    """Where the contracts of a plugin (its ``module``) may be, in order, and how to name
    that place: the package ``<package>.contracts``, then, for a plugin run from its
    source tree, ``contracts/`` beside its package's folder (where that package data is
    taken from, as in the plugin tutorial); for a plugin module outside any package,
    ``contracts/`` beside it."""
    if not module.__package__:
        folder = Path(module.__file__ or ".").parent / CONTRACTS_FOLDER
        return [folder], str(folder)
    package = f"{module.__package__}.{CONTRACTS_FOLDER}"
    folders: list[Traversable] = []
    with contextlib.suppress(ModuleNotFoundError):
        folders.append(files(package))
    package_file = getattr(sys.modules.get(module.__package__), "__file__", None)
    if package_file:
        folders.append(Path(package_file).parent.parent / CONTRACTS_FOLDER)
    return folders, f"the package {package}"


def contract_file(gateway: Gateway, product: Product) -> Traversable:
    """The contract ``product`` declares, in the plugin that registered it.

    Raises :class:`RegistrationError` when the product declares none or the file is not
    installed."""
    plugin_name = gateway.registry.owners[f"product:{product.name}"]
    if product.contract is None:
        raise RegistrationError(f"plugin {plugin_name!r}: product {product.name!r} has no contract")
    plugin = gateway.plugins.get_plugin(plugin_name)
    module = plugin if isinstance(plugin, ModuleType) else sys.modules[type(plugin).__module__]
    folders, where = _contracts_folders(module)
    for folder in folders:
        if (folder / product.contract).is_file():
            return folder / product.contract
    raise RegistrationError(
        f"plugin {plugin_name!r}: product {product.name!r} declares contract "
        f"{product.contract!r}, which is not installed: ship it as package data in {where}"
    )


def common_file() -> Traversable:
    """``common.yaml``, the components the product contracts share."""
    return files(f"tollway.{CONTRACTS_FOLDER}") / COMMON


@functools.cache
def _parse(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # a safe loader, in C when libyaml is there


def read_contract(resource: Traversable) -> dict[str, Any]:
    """The contract in ``resource`` as a mapping; parsed once per process for a given text.
    Callers must not change what is returned."""
    try:
        document = _parse(resource.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise RegistrationError(f"cannot read the contract {resource}: {error}") from error
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3."):
        raise RegistrationError(f"the contract {resource} is not an OpenAPI 3 document")
    return document
