"""The console's SMTP mail backend: Django's, but keeping what the mail server answered for
each recipient.

smtplib's sendmail returns the recipients the server refused when it took the mail for others,
and Django's backend drops that answer: an alert whose mail server took one address and
refused another (a full mailbox, 452; an unknown user, 550) was recorded as sent to both, and
the refused ones were never tried again (left28). This one records them on the message
(`refused`: address as given -> (code, reply)), for jobs.alerts to retry the temporary ones
and record the permanent ones; a mail every recipient refused still raises
SMTPRecipientsRefused, as Django's does, keyed by the addresses as given too, and naming every
recipient when the server closed the session (421) part way.
"""

from __future__ import annotations

import email.policy
import smtplib
from typing import Any

from django.core.mail.backends import smtp


class EmailBackend(smtp.EmailBackend):
    def _send(self, email_message: Any) -> bool:
        if not email_message.recipients():
            return False
        from_email = self.prep_address(email_message.from_email)
        # The server answers for each address as sent; the caller knows them as given.
        given = {self.prep_address(a): a for a in email_message.recipients()}
        message = email_message.message(policy=email.policy.SMTP)
        try:
            refused = self.connection.sendmail(from_email, list(given), message.as_bytes())
        except smtplib.SMTPRecipientsRefused as exc:
            if self.fail_silently:
                return False
            answers = {given.get(a, a): answer for a, answer in exc.recipients.items()}
            # A 421 (the server closing the session) ends smtplib's send at that address: those
            # taken before it were never sent the mail, those after it never asked, and none is
            # in its answers. Each gets that 421, to be tried again (review30: they were
            # dropped without a word, neither sent nor failed).
            closing = next((answer for answer in answers.values() if answer[0] == 421), None)
            if closing is not None:
                answers = {a: answers.get(a, closing) for a in given.values()}
            raise smtplib.SMTPRecipientsRefused(answers) from exc
        except smtplib.SMTPException:
            if not self.fail_silently:
                raise
            return False
        email_message.refused = {given.get(a, a): answer for a, answer in refused.items()}
        return True
