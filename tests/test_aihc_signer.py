"""bce-auth-v1: every published vector of the reference's section 4.2, reproduced exactly."""

from __future__ import annotations

import pytest

from jobs.aihc import signer

BOS_AK = "a" * 32
BOS_SK = "b" * 32
BOS_TIME = "2015-04-27T08:23:49Z"
BOS_PATH = "/v1/test/myfolder/readme.txt"
BOS_PARAMS = [("partNumber", "9"), ("uploadId", "a44cc9bab11cbd156984767aad637851")]
BOS_HEADERS = {
    "Host": "bj.bcebos.com",
    "Date": "Mon, 27 Apr 2015 16:23:49 +0800",
    "Content-Type": "text/plain",
    "Content-Length": "8",
    "Content-Md5": "NFzcPqhviddjRNnSOGo4rw==",
    "x-bce-date": BOS_TIME,
}

AIHC_TIME = "2023-11-14T22:13:20Z"
AIHC_HEADERS = {
    "Host": "aihc.bj.baidubce.com",
    "Content-Type": "application/json",
    "Content-Length": "2",
    "x-bce-date": AIHC_TIME,
}


def bos(**kwargs) -> str:
    return signer.authorization(
        access_key=BOS_AK,
        secret_key=BOS_SK,
        method="PUT",
        path=BOS_PATH,
        params=BOS_PARAMS,
        headers=BOS_HEADERS,
        timestamp=BOS_TIME,
        **kwargs,
    )


def aihc(**kwargs) -> str:
    return signer.authorization(
        access_key="test-ak",
        secret_key="test-sk",
        method="POST",
        path="/api/v1/aijobs",
        params=[("resourcePoolId", "cce-xxxx")],
        headers=AIHC_HEADERS,
        timestamp=AIHC_TIME,
        **kwargs,
    )


def test_it_reproduces_baidus_published_authorization_header():
    assert bos() == (
        "bce-auth-v1/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/2015-04-27T08:23:49Z/1800//"
        "d74a04362e6a848f5b39b15421cb449427f419c95a480fd6b8cf9fc783e2999e"
    )


def test_it_derives_the_published_signing_key():
    prefix = f"bce-auth-v1/{BOS_AK}/{BOS_TIME}/1800"
    assert signer.signing_key(BOS_SK, prefix) == (
        "1d5ce5f464064cbee060330d973218821825ac6952368a482a592e6615aef479"
    )


def test_it_builds_the_published_canonical_request():
    signed = signer.headers_to_sign(BOS_HEADERS, None)
    assert signer.canonical_request("PUT", BOS_PATH, BOS_PARAMS, signed) == (
        "PUT\n/v1/test/myfolder/readme.txt\n"
        "partNumber=9&uploadId=a44cc9bab11cbd156984767aad637851\n"
        "content-length:8\ncontent-md5:NFzcPqhviddjRNnSOGo4rw%3D%3D\n"
        "content-type:text%2Fplain\nhost:bj.bcebos.com\nx-bce-date:2015-04-27T08%3A23%3A49Z"
    )


def test_it_signs_only_host_and_date_when_asked():
    assert bos(signed_header_names=["host", "x-bce-date"]) == (
        f"bce-auth-v1/{BOS_AK}/{BOS_TIME}/1800/host;x-bce-date/"
        "1b8de5a23a56eef657c69f94c621e7acd227d049a4ba577f537d5e5cebf0cf32"
    )


def test_it_derives_the_aihc_shaped_signing_key():
    prefix = f"bce-auth-v1/test-ak/{AIHC_TIME}/1800"
    assert signer.signing_key("test-sk", prefix) == (
        "ccff85fa77e3208e4a92c96ed64fcac6d69174efd477b927d695889cc39e9bb4"
    )


@pytest.mark.parametrize(
    ("names", "listed", "signature"),
    [
        (None, "", "9611fc77ea4ed76803191fe47c0f3b894cb3a40f288468d449786159cab1fbfd"),
        (
            ["host", "x-bce-date"],
            "host;x-bce-date",
            "48ccce4d67e8ecd1726790193159460e695dff231ebd4d976d021d3d82c53b1a",
        ),
        (
            ["content-type", "host", "x-bce-date"],
            "content-type;host;x-bce-date",
            "b962924ad47e49b95eddf424773eef77a3d0c9dfd6f0b377d5019263d49b76d2",
        ),
    ],
)
def test_it_reproduces_the_aihc_shaped_vectors(names, listed, signature):
    assert aihc(signed_header_names=names) == (
        f"bce-auth-v1/test-ak/{AIHC_TIME}/1800/{listed}/{signature}"
    )


def test_it_formats_the_timestamp_from_epoch_seconds_in_utc():
    assert signer.canonical_time(1430123029) == BOS_TIME
    assert signer.canonical_time(1700000000) == AIHC_TIME


def test_it_percent_encodes_everything_but_unreserved_characters():
    assert signer.uri_encode("a-b_c.d~e f/g:h=é") == "a-b_c.d~e%20f%2Fg%3Ah%3D%C3%A9"
    assert signer.uri_encode("/api/v1/a b", keep_slash=True) == "/api/v1/a%20b"


def test_it_sorts_encoded_parameters_and_leaves_out_authorization():
    query = signer.canonical_query([("z", "1"), ("a", ""), ("authorization", "x"), ("k", "a b&c")])
    assert query == "a=&k=a%20b%26c&z=1"


def test_a_different_secret_key_gives_a_different_signature():
    other = signer.authorization(
        access_key=BOS_AK,
        secret_key="c" * 32,
        method="PUT",
        path=BOS_PATH,
        params=BOS_PARAMS,
        headers=BOS_HEADERS,
        timestamp=BOS_TIME,
    )
    assert other != bos()
    assert other.rsplit("/", 1)[0] == bos().rsplit("/", 1)[0]
