/**
 * MAM's library API (`import { register, publish, watch, close } from 'mam-toolkit'`): the one entry
 * point of the package. Everything else in it is private and may change in any release; what is
 * named here follows semver. Kept small on purpose: the commands' operations, the wire (sign,
 * verify, canonical JSON, topics, payloads), the domain's words, the configuration and the errors
 * the core throws. No registry object: a record changes only through an operation, so only through
 * the transition rules (contract §2), exactly as with the commands.
 */

// ---- the commands' operations --------------------------------------------------------------

export {
  /** Record a pending job, the limits not given taken from the configuration, as `mam-register` does. */
  register,
  /** The options of `register`. */
  type RegisterOptions,
} from './register.ts';
export {
  /** An operator's close, committed then told to watchers by its signed state, as `mam-close` does. */
  close,
  /** The options of `close`. */
  type CloseOptions,
  /** What `close` resolves with: the record, and why watchers were not told if they were not. */
  type CloseResult,
} from './close.ts';
export {
  /** One job's record without its token, as `mam show` prints it. */
  show,
  /** Claim the oldest pickable pending job for a session, as `mam-pick` does. */
  pick,
  /** Make a job pending again as a new attempt, as `mam redispatch` does. */
  redispatch,
  /** The options of `show` and `redispatch`. */
  type JobOptions,
  /** The options of `pick`. */
  type PickOptions,
} from './jobs.ts';

export {
  /** Record, sign and deliver one lifecycle event, as `mam-publish` does. */
  publish,
  /** The options of `publish`. */
  type PublishOptions,
} from './publish.ts';
export {
  /** Watch jobs until they resolve, handing each verified message to a callback, as `mam-subscribe` does. */
  watch,
  /** The options of `watch`. */
  type WatchOptions,
  /** Which jobs `watch` follows: `jobIds`, or `all`. */
  type WatchTarget,
  /** The callbacks, signal, timeouts and context of `watch`. */
  type WatchCallbacks,
  /** A message `watch` hands `onEvent`: an event, or the state that resolved a job. */
  type WatchedPayload,
} from './watch.ts';
export type {
  /** The `config` (and `registryDir`, as `--registry`) that every operation loads itself when not given. */
  ApiContextOptions,
} from './context.ts';
export type {
  /** How and why a watch ended. */
  WatchOutcome,
} from '../core/subscriber/subscriber.ts';
export type {
  /** Why a watch ended (`all_completed`, `job_failed`, `wall_timeout`, `idle_timeout`, `broker_unreachable`, `stopped`). */
  ExitReason,
  /** Which clock ran out in a timeout: `wall` or `idle`. */
  ClockKind,
} from '../core/subscriber/watch-actions.ts';
export type {
  /** `timeoutSec`, `idleTimeoutSec`, `ackTimeoutSec`: overrides of every watched job's limits. */
  WatchTimeoutFlags,
} from '../core/subscriber/watch-state.ts';

// ---- wire ----------------------------------------------------------------------------------

export {
  /** A copy of a payload with `data.hmac_sig` set, numbers spelled as Python spells them. */
  signPayload,
  /** True when a parsed payload (from `parseWireJson`) carries a valid signature for the key; never throws. */
  verifyPayload,
  /** HMAC-SHA256 (lowercase hex) of a payload's canonical JSON. */
  computeHmac,
  /** A payload type with its `data.hmac_sig`. */
  type Signed,
} from '../core/wire/signature.ts';
export {
  /** The HMAC message: Python's `json.dumps(sort_keys=True, separators=(",", ":"))`, byte for byte. */
  canonicalJson,
  /** The compact JSON that goes on the wire: `canonicalJson` with keys left in their order. */
  wireJson,
  /** Parse a payload as receivers must, numbers kept as their wire lexemes (`LosslessNumber`). */
  parseWireJson,
} from '../core/wire/canonical-json.ts';
export {
  /** `<root>/<job_id>/events`. */
  eventsTopic,
  /** `<root>/<job_id>/state` (retained). */
  stateTopic,
  /** `<root>/<job_id>/dispatch` (retained, remote transport). */
  dispatchTopic,
  /** A watcher's filter for one job: `<root>/<job_id>/+`. */
  jobFilter,
  /** A watcher's filter for every job: `<root>/+/+`. */
  allJobsFilter,
  /** The job and kind a received topic names, or undefined. */
  parseTopic,
  /** What `parseTopic` returns. */
  type ParsedTopic,
  /** `events`, `state` or `dispatch`. */
  type TopicKind,
} from '../core/wire/topics.ts';
export {
  /** zod schema of an event payload (run it on `parseWireJson`'s output). */
  eventPayloadSchema,
  /** zod schema of a state payload (run it on `parseWireJson`'s output). */
  statePayloadSchema,
  /** An event payload as its schema outputs it. */
  type EventPayload,
  /** A state payload as its schema outputs it. */
  type StatePayload,
  /** An unsigned event payload, in the Python toolkit's key order. */
  buildEventPayload,
  /** An unsigned state payload, in the Python toolkit's key order. */
  buildStatePayload,
  /** What `buildEventPayload` takes. */
  type EventPayloadInput,
  /** What `buildStatePayload` takes. */
  type StatePayloadInput,
  /** What `buildEventPayload` returns. */
  type UnsignedEventPayload,
  /** What `buildStatePayload` returns. */
  type UnsignedStatePayload,
  /** A payload's `data`: `dispatch_token`, `attempt_id` and the caller's keys. */
  type PayloadData,
} from '../core/wire/payloads.ts';

// ---- vocabulary ----------------------------------------------------------------------------

export {
  /** A job's statuses: `pending`, `running`, `completed`, `error`, `cancelled`. */
  JOB_STATUSES,
  /** One of `JOB_STATUSES`. */
  type JobStatus,
  /** The statuses that end a job: `completed`, `error`, `cancelled`. */
  TERMINAL_STATUSES,
  /** One of `TERMINAL_STATUSES`. */
  type TerminalStatus,
  /** True for a terminal status. */
  isTerminalStatus,
  /** What an agent publishes: `started`, `progress`, `permission_required`, `completed`, `error`. */
  LIFECYCLE_EVENTS,
  /** One of `LIFECYCLE_EVENTS`. */
  type LifecycleEvent,
  /** The events that end a job: `completed`, `error`. */
  TERMINAL_EVENTS,
  /** One of `TERMINAL_EVENTS`. */
  type TerminalEvent,
  /** True for a terminal event. */
  isTerminalEvent,
  /** The status a terminal event gives its job, else null. */
  terminalStatusOf,
  /** `mam-close --request` values: `cancelled`, `deadline_timeout`, `completed`, `error`. */
  CLOSE_REQUESTS,
  /** One of `CLOSE_REQUESTS`. */
  type CloseRequest,
  /** The status a close request gives its job (`deadline_timeout` → `error`). */
  statusOfCloseRequest,
  /** How a job reaches its agent: `herdr`, `remote`. */
  TRANSPORTS,
  /** One of `TRANSPORTS`. */
  type Transport,
  /** A job id: 8 lowercase hex digits. */
  JOB_ID_PATTERN,
  /** A dispatch token: 32 lowercase hex digits. */
  DISPATCH_TOKEN_PATTERN,
  /** True for a well-formed job id. */
  isJobId,
  /** zod schema of a job id. */
  jobIdSchema,
  /** zod schema of a dispatch token. */
  dispatchTokenSchema,
  /** The keys of `data` the publisher sets: `hmac_sig`, `dispatch_token`, `attempt_id`. */
  RESERVED_DATA_KEYS,
  /** The detail of a heartbeat's `progress` event. */
  HEARTBEAT_DETAIL,
  /** The default detail, `Job <id> <event>`. */
  defaultDetail,
} from '../core/vocabulary.ts';

// ---- records and configuration -------------------------------------------------------------

export {
  /** zod schema of a job record. */
  jobRecordSchema,
  /** A job record, as on disk (it holds the job's `auth_token`). */
  type JobRecord,
  /** A record without its `auth_token`: what the operations return. */
  type PublicJobRecord,
  /** A record without its `auth_token`: what may be printed or logged. */
  publicView,
} from '../core/registry/job-record.ts';
export {
  /** The configuration, from the environment and `<workspace>/.mam.env`, as every command loads it. */
  loadConfig,
  /** What `loadConfig` returns. */
  type MamConfig,
  /** The broker part of `MamConfig`. */
  type BrokerConfig,
} from '../core/config/config.ts';

// ---- errors --------------------------------------------------------------------------------

export {
  /** The base class of every error MAM throws. */
  MamError,
  /** A bad argument: job id, event, data, option. */
  UsageError,
  /** No record for the job id. */
  NoSuchJob,
  /** No pending job can be claimed by the session. */
  NothingPickable,
  /** A transition refused: terminal job, stale dispatch token or attempt, heartbeat barrier. */
  TransitionRefused,
  /** A record on disk that does not parse or validate. */
  CorruptRecord,
  /** A lock still held by another process when the wait ran out. */
  LockTimeout,
  /** A lock taken away while held. */
  LockLost,
  /** A configuration that cannot be used. */
  ConfigError,
} from '../core/errors.ts';
export {
  /** Bytes that are not a JSON document MAM reads (thrown by `parseWireJson`). */
  WireParseError,
  /** A value with no spelling on the wire (NaN, a Date, a cycle…). */
  WireEncodeError,
} from '../core/wire/wire-errors.ts';
export {
  /** A broker could not be used; `transient` says whether trying again may help. */
  BrokerError,
  /** A socket-level failure to reach the broker. */
  BrokerUnreachable,
  /** The broker refused the connection (credentials, authorization). */
  BrokerRefusedConnection,
  /** The TLS handshake with the broker failed. */
  BrokerTlsRefused,
  /** The broker refused a subscription (an ACL). */
  SubscriptionRefused,
} from '../core/mqtt/broker-errors.ts';
export {
  /** An event recorded on disk that the broker did not acknowledge. */
  NotDelivered,
} from '../core/publisher/not-delivered.ts';
