"""The outside server's own housekeeping (tests/outside_network.py), with another test process
setting up its server at the same time (`make test` runs two, pytest-xdist)."""

from __future__ import annotations

import secrets

from .outside_network import PREFIX, _ip, remove_leftovers


def test_a_link_another_test_is_still_setting_up_is_not_removed_as_a_leftover(outside):
    # As outside_server leaves it between `ip link add` and `ip link set alias`: a live
    # server's veth without its owner named yet. Removed, that test's next `ip` call failed.
    link = PREFIX + secrets.token_hex(4)
    _ip("link", "add", link, "type", "veth", "peer", "name", "halfway", "netns", str(outside.pid))
    try:
        remove_leftovers()

        assert link in _ip("-o", "link", "show", link)
    finally:
        _ip("link", "del", link)
