"""Django's own words the console says otherwise in Chinese (jobs/django_terms.py), as the
pages show them."""

from __future__ import annotations

import re

from django.test import Client


def test_the_admin_index_reads_its_table_headers_in_natural_chinese(superuser):
    """The index's screen-reader-only headers were Django's 型号名称 / 增加连接 / 更改或查看清单连接
    ("Model name", "Add link", "Change or view list link"): a product model's name and a
    network connection, read aloud before every app's table."""
    client = Client()
    client.force_login(superuser)
    client.cookies["django_language"] = "zh-hans"

    page = client.get("/admin/").content.decode()

    headers = re.findall(r'<th scope="col">([^<]*)</th>', page)
    assert headers and headers.count("名称") == headers.count("新增") == len(headers) // 3
    assert headers.count("修改或查看列表") == len(headers) // 3
    for machine_like in ("型号名称", "增加连接", "更改或查看清单连接"):
        assert machine_like not in page
