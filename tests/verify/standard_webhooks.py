"""Checks deliveries with the stock `standardwebhooks` library, as a receiver would.

Reads JSON from stdin: {"secrets": ["whsec_…", …], "deliveries": [{"headers": {…},
"body": "…"}, …]} and prints, for each delivery, one list: for each secret, whether a
`Webhook(secret)` verifies it.
"""

import json
import sys

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


def verifies(secret, delivery):
    try:
        Webhook(secret).verify(delivery["body"], delivery["headers"], json_parse=False)
        return True
    except WebhookVerificationError:
        return False


def main():
    given = json.load(sys.stdin)
    answers = [[verifies(s, d) for s in given["secrets"]] for d in given["deliveries"]]
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
