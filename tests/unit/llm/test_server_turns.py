"""The model server's turns: one computation at a time, in arrival order, and a request
whose client left while it waited is dropped without computing and without keeping the
turn."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from fastapi import Request

from reag.llm.server import _ClientGoneError, _Turns


class _Client:
    def __init__(self) -> None:
        self.gone = False

    async def is_disconnected(self) -> bool:
        return self.gone


def _request(client: _Client) -> Request:
    return cast(Request, client)


async def test_turns_are_first_come_first_served() -> None:
    turns = _Turns(poll_s=0.01)
    order: list[int] = []

    async def work(i: int) -> None:
        async with turns.turn(_request(_Client())):
            order.append(i)
            await asyncio.sleep(0.01)

    tasks = []
    for i in range(5):
        tasks.append(asyncio.create_task(work(i)))
        await asyncio.sleep(0.001)  # arrive in this order
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3, 4]


async def test_a_request_whose_client_left_is_dropped_and_frees_nothing_it_never_held() -> None:
    turns = _Turns(poll_s=0.01)
    computed: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with turns.turn(_request(_Client())):
            computed.append("first")
            await release.wait()

    first = asyncio.create_task(holder())
    await asyncio.sleep(0.02)
    leaving = _Client()

    async def waiter() -> None:
        async with turns.turn(_request(leaving)):
            computed.append("abandoned")

    second = asyncio.create_task(waiter())
    await asyncio.sleep(0.03)
    leaving.gone = True
    with pytest.raises(_ClientGoneError):
        await second
    release.set()
    await first
    async with turns.turn(_request(_Client())):  # the turn is free again
        computed.append("third")
    assert computed == ["first", "third"]


async def test_a_client_gone_by_its_turn_is_not_computed() -> None:
    turns = _Turns(poll_s=0.01)
    gone = _Client()
    gone.gone = True
    ran: list[Any] = []
    with pytest.raises(_ClientGoneError):
        async with turns.turn(_request(gone)):
            ran.append(1)
    assert not ran
    async with turns.turn(_request(_Client())):
        ran.append(2)
    assert ran == [2]
