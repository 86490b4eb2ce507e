from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from jobs import accounts

urlpatterns = [
    path("", include("jobs.urls")),
    path("login/", accounts.login, name="login"),
    path("logout/", accounts.logout, name="logout"),
    path("account/password/", accounts.password_change, name="password-change"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
]
