"""moto's server, with a race in its SQS model mended and two of its costs that grow with a
queue's length taken out.

moto (5.2.5) deletes a message by building the queue's list anew without it, outside the lock
that sending takes to append: a message sent while another is deleted can vanish, acknowledged
and never received (SQS never does this; the many-worker test, with eight workers deleting
while registrations send, lost a few tasks a run to it). Here a delete holds that lock and
removes the message from the list in place.

moto (5.2.5) checks each message a receive hands out against the queue's retention period by
building every attribute of the queue, and three of those (the approximate counts of visible,
delayed and in-flight messages) walk all messages held, each message reading the clock through
two datetime conversions. A receive of ten from a queue holding thousands therefore walks it
ninety times; at a few thousand messages the emulator spends seconds per call and a test that
keeps a queue busy (the many-worker test) never catches up. The behaviour is unchanged: the
retention period is read from the queue itself, and the clock is the same clock, read once.

Run as `python moto_server.py <moto_server's own arguments>`.
"""

import sys
import time

from moto.server import main
from moto.sqs import models
from moto.sqs.exceptions import ReceiptHandleIsInvalid


def unix_time(dt=None):
    """Seconds since the epoch: moto's own for a given datetime, `time.time()` for now."""
    if dt is not None:
        return _moto_unix_time(dt)
    return time.time()


def unix_time_millis(dt=None):
    return unix_time(dt) * 1000.0


def delete_message(self, receipt_handle):
    """moto's delete, under the lock its sends append under, removing the message from the
    list in place (a receive moving a message to the dead-letter queue removes it from the
    same list, outside any lock; each removal is one step)."""
    with self._messages_lock:
        if receipt_handle in self.deleted_messages:
            return
        doomed = [m for m in self._messages if m.had_receipt_handle(receipt_handle)]
        if not doomed:
            raise ReceiptHandleIsInvalid()
        for message in doomed:
            self.pending_messages.discard(message)
            self.deleted_messages.update(message.all_receipt_handles)
            try:
                self._messages.remove(message)
            except ValueError:
                pass  # moved to the dead-letter queue meanwhile


def is_message_valid_based_on_retention_period(self, queue_name, message):
    """moto's check, reading the one attribute it needs instead of building all of them."""
    retention_period = int(self.get_queue(queue_name).message_retention_period)
    return retention_period + message.sent_timestamp / 1000 > time.time()


_moto_unix_time = models.unix_time
models.Queue.delete_message = delete_message
models.unix_time = unix_time
models.unix_time_millis = unix_time_millis
models.SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period

if __name__ == "__main__":
    sys.exit(main())
