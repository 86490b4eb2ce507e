from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from jobs import accounts, health_views, help_views, usage_views
from jobs.http import bad_request, page_not_found, permission_denied, server_error

urlpatterns = [
    path("", include("jobs.urls")),
    path("login/", accounts.login, name="login"),
    path("logout/", accounts.logout, name="logout"),
    path("account/password/", accounts.password_change, name="password-change"),
    # One's time zone (jobs.time_zones), chosen on the password page.
    path("account/time-zone/", accounts.time_zone_set, name="time-zone-set"),
    # Access keys for the AIHC-compatible API, and the API itself (jobs.api_views).
    path("account/keys/", accounts.api_keys, name="api-keys"),
    path("account/keys/revoke-all/", accounts.api_keys_revoke_all, name="api-keys-revoke-all"),
    path(
        "account/keys/<str:access_key_id>/revoke/", accounts.api_key_revoke, name="api-key-revoke"
    ),
    # One's own card-hours (jobs.usage_views); everyone's are in the admin's usage report.
    path("account/usage/", usage_views.my_usage, name="my-usage"),
    # 帮助: the console's help page, whose anchors the wizard's fields link (jobs.help_views).
    path("help/", help_views.help_page, name="help"),
    path("api/v1/", include("jobs.api_urls")),
    # Django's set_language, which also keeps a logged-in user's choice for their mails.
    path("i18n/setlang/", accounts.set_language, name="set_language"),
    path("i18n/", include("django.conf.urls.i18n")),
    # For load balancers and probes: no log-in, no session (jobs.health_views).
    path("healthz", health_views.healthz, name="healthz"),
    # The admin's Log out is the console's: the same notice on the login page, and a GET (a
    # typed address) asks first instead of answering a blank 405 (reversed as admin:logout,
    # which names this same address, below).
    path("admin/logout/", accounts.logout, name="admin-logout"),
    path("admin/", admin.site.urls),
]

# A request by a host ALLOWED_HOSTS does not list says so, not "the form may be too large".
handler400 = bad_request
# The pages not found and forbidden as Django's, but the 503 page while the database cannot be
# reached (they read the user from it: jobs.http.unless_database_unreachable).
handler403 = permission_denied
handler404 = page_not_found
# A call of the API gets the API's JSON error (500 InternalError), not the HTML page.
handler500 = server_error
