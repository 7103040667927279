// The status line's size of a request, raw and sent, measured without re-serialising the
// conversation on every request.
import type { AgentMessage } from "@pi-pruner/core";
import { messageChars, messageFingerprint } from "@pi-pruner/core";

export interface Reclaim {
  rawChars: number;
  sentChars: number;
}

/**
 * The sizes of one side of a request (raw or sent) by position, with what identifies each message
 * cheaply: no serialisation, only its fingerprint.
 */
class PositionSizes {
  private fingerprints: number[] = [];
  private chars: number[] = [];

  /** The total size of `messages`, measuring only the messages that differ from the ones remembered at their positions. */
  total(messages: readonly AgentMessage[]): number {
    const n = messages.length;
    const { fingerprints, chars } = this;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const message = messages[i]!;
      const fingerprint = messageFingerprint(message);
      if (i < fingerprints.length && fingerprints[i] === fingerprint) {
        sum += chars[i]!;
        continue;
      }
      const size = messageChars(message);
      fingerprints[i] = fingerprint;
      chars[i] = size;
      sum += size;
    }
    fingerprints.length = chars.length = n;
    return sum;
  }
}

/**
 * The status line's size measure without re-serialising the conversation on every request. A
 * message's size (core's `messageChars`, which serialises tool-call arguments) is remembered by
 * position, for the raw and the sent array each, and reused while the message at that position has
 * the same fingerprint (core's `messageFingerprint`): Pi hands over a fresh copy each time, so
 * identity cannot be used across requests, and history only grows at the end.
 */
export class RequestSizes {
  private readonly raw = new PositionSizes();
  private readonly sent = new PositionSizes();

  measure(raw: readonly AgentMessage[], sent: readonly AgentMessage[]): Reclaim {
    return { rawChars: this.raw.total(raw), sentChars: this.sent.total(sent) };
  }
}
