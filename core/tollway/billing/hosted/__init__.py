"""Hosted card pages: a keyless HTML page at ``<prefix>/<session id>`` where a visitor
types a card, and what every such page needs, built once (launchpad's checkout, the
account product's "Save a card").

A product keeps its sessions (made with :func:`new_session_id`, stored by
:func:`id_hash`, completed once by :func:`complete_session`) and what its page does
with the card; it subclasses :class:`HostedCardPage` (the flow, :mod:`.page`),
registers it as a service and as the dependency :data:`DEPENDENCY`, and serves
:func:`card_page_routes` admitted by :func:`tollway.visitor_access` (:mod:`.routes`). The kit
gives the HTML (:mod:`.html`), reading and parsing the form (:mod:`.form`), the proof
that a form is the page's own (:mod:`.guard`), the answers with their security
headers (:mod:`.responses`), the URLs a page sends the visitor on to (:mod:`.urls`)
and the sessions' ids (:mod:`.sessions`).
"""

from tollway.billing.hosted.form import PaymentForm, PaymentOperation, Unreadable, card, read_form
from tollway.billing.hosted.guard import FormGuard
from tollway.billing.hosted.html import card_form, message_page, price
from tollway.billing.hosted.page import CardSession, HostedCardPage
from tollway.billing.hosted.responses import form_action, page, redirect
from tollway.billing.hosted.routes import DEPENDENCY, card_page_routes
from tollway.billing.hosted.sessions import SESSION_ID, complete_session, id_hash, new_session_id
from tollway.billing.hosted.urls import Url, return_url

__all__ = [
    "DEPENDENCY",
    "SESSION_ID",
    "CardSession",
    "FormGuard",
    "HostedCardPage",
    "PaymentForm",
    "PaymentOperation",
    "Unreadable",
    "Url",
    "card",
    "card_form",
    "card_page_routes",
    "complete_session",
    "form_action",
    "id_hash",
    "message_page",
    "new_session_id",
    "page",
    "price",
    "read_form",
    "redirect",
    "return_url",
]
