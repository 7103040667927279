// The public API of @pi-pruner/core: what the Pi extension and the editor use, by name and by
// concern. Tests and the bench reach modules directly; everything here has a user outside core.

// Shapes of Pi's messages and session entries, sizes, text
export { type AnyEntry, isMessageEntry, type FrontierData, type PersistEntry, PRUNE_CHAIN, PRUNE_FRONTIER, PRUNE_STATS, QUERY_TOOL, type SpillStorage, type StatsData } from "./shapes/entries.ts";
export { shownValue } from "./shapes/deep-json.ts";
export { messageFingerprint } from "./shapes/fingerprint.ts";
export { type AgentMessage, type AssistantMessage, contentText, type ToolResultMessage } from "./shapes/messages.ts";
export { estimateTokens, formatCount, formatNumber, formatSaving, messageChars, messagesChars } from "./shapes/size.ts";
export { oneLine } from "./shapes/text.ts";

// Settings: reading, validating, protection, writing
export { type ConfigWarning, DEFAULT_CONFIG, ownList, type PruneConfig, resolveConfig, THINKING_LEVELS, validateConfig } from "./settings/config.ts";
export { createPathMatcher, isProtected, type ProtectionConfig } from "./settings/protection.ts";
export { agentDirFrom, expandHome, loadConfig, type LoadedConfig, settingsPaths } from "./settings/settings-reader.ts";
export { addProtectedPath, removeProtectedPath, revertSettingsFileChange, setPruneSetting, type SettingsFileChange, SettingsFileError } from "./settings/settings-writer.ts";

// How providers bill the prompt cache
export { type ReadAfterChange } from "./cost/cache-rules.ts";
export { type CacheRules, type ModelInfo, PRICE_MODELS, type PriceRules, priceRulesFor, type Pricing } from "./cost/price-rules.ts";
export { type BreakpointMemory, markerWireOf, placeFrontierBreakpoint } from "./cost/breakpoints.ts";
export { summarizerCost } from "./cost/flush-economics.ts";
export { type BillTotals, SessionBill } from "./cost/session-bill.ts";

// Session files: reading, locating, spills
export { fileSpillStorage } from "./session/blobs.ts";
export { firstWords, lastPromptOf } from "./session/labels.ts";
export { BodyCache, withBodies } from "./session/lazy-bodies.ts";
export { DEFAULT_MAX_LINE_BYTES, LineSplitter, type LineSink, scanLines } from "./session/line-scan.ts";
export { buildPiContext, type ContextMessage } from "./session/pi-context.ts";
export { listAllSessionFiles, listSessionFiles, readSessionHead, sessionDirFor, type SessionFileInfo, type SessionHead, sessionsRoot } from "./session/session-files.ts";
export { defaultLeafId, getBranch, readSessionFile, readSessionTail, type SessionData, type TailResult } from "./session/session-reader.ts";

// The agent's self-control: rewinds, shrinks, notes, nudges, audits
export { auditReport, formatAudit } from "./control/audit.ts";
export { activeRewinds, activeShrinks, CANCEL_ENTRY, type CancelData, CHECKPOINT_NAME, CHECKPOINT_PREFIX, CONTROL_SCHEMA, CONTROL_VERSION, type ControlMarker, type ControlState, EMPTY_CONTROLS, GRANULARITIES, type Granularity, keyTimestamp, messageKey, NOTE_MESSAGE, REWIND_ENTRY, type RewindData, SHRINK_ENTRY, type ShrinkTarget, TURN_METRIC_ENTRY, type TurnMetricData } from "./control/control-entries.ts";
export { extractLedger, hasMutations } from "./control/ledger.ts";
export { MUTATION_WARNING, renderNote, validateNote } from "./control/note.ts";
export { agentAttributableTokens, bloatReminder, bloatThreshold, contentBytes, driftNudge, highWater, type HighWaterState, turnGrowthOf } from "./control/nudges.ts";
export { ControlsReader, nextSeqOf, readShrinkTarget } from "./control/read-controls.ts";
export { checkRewind } from "./control/rewind-guards.ts";
export { cancelData, capForNotice, describeShrinkTarget, shrinkData, shrinkRefusal, shrinksOverCap } from "./control/shrink-guards.ts";
export { resolveShrinkTarget, searchableText, visibleContext } from "./control/spans.ts";

// Pruning: batches, flushes, the index, chains, the summarizer
export { type ChainCompressionResult, compressChains } from "./prune/chain-plan.ts";
export { type CacheReadMeter, chooseFlush, frontierQueue, turnBlocks } from "./prune/flush-choice.ts";
export { afterRequest, afterTask, type FlushDecision, type FlushMoment, type RequestHistory } from "./prune/flush-policy.ts";
export { applySummaries, type Batch, captureBatch, type FlushResult, type JobAnswers, planFlush, spillOversized, summarizeJobs, type SummaryJob } from "./prune/flush.ts";
export { type SessionCall, sessionCallsOf, supersededBy } from "./prune/stale-outputs.ts";
export { requestHistoryOf, unflushedBatches } from "./prune/pending-batches.ts";
export { branchRef, branchRefsOf, canNameBranch, mentionsRef, parseBranchRef, renameBranchRefs } from "./prune/branch-refs.ts";
export { copyIndex, emptyIndex, type IndexedCall, type PruneIndex, rebuildIndex, resolveRequest } from "./prune/prune-index.ts";
export { describeTarget, stripFooter, type Summarizer, type SummarizerAnswer, type SummarizerUsage } from "./prune/summarizer-prompts.ts";

// The render: what the model is sent
export { createRenderMemo, type RenderConfig, renderModelView, type RenderStep, renderWhole } from "./render/render.ts";
export { type CompactionResend, compactionResend, CompactionResendReader, newestCompactionAt, protectedOutputsById, resendBudget } from "./render/compaction-protect.ts";
export { isUserShellId, userShellOutputsById } from "./render/user-shell.ts";
export { summarizedStub } from "./render/stubs.ts";

// Views for people: the session view, model views, requests, timeline, search
export { decideAppend } from "./view/append-decision.ts";
export { type CallState, isPrunedState } from "./view/call-state.ts";
export { buildChainReview } from "./view/chain-review.ts";
export { markerEffectText, markerStateText, type MarkerView } from "./view/control-view.ts";
export { type ExportSource, modelViewMarkdown, summariesMarkdown } from "./view/export-markdown.ts";
export { callsNamingFile, type FileCall, type FileQuery, rewoundEntries } from "./view/file-calls.ts";
export { buildModelViewWithBodies, type ModelView, modelViewText, NEXT_REQUEST_TITLE, sizesLine } from "./view/model-view.ts";
export { configOfRecord, settingsEntryData, settingsToRecord } from "./view/recorded-settings.ts";
export { BranchCostBuilder, causeText, type RequestCost, requestCostLine, type RewriteCauseKind } from "./view/request-cost.ts";
export { type ModelRequestRef, modelRequests, NUDGES_NOT_SHOWN, RequestRenderer, type RequestView, settingsSourceText } from "./view/request-views.ts";
export { type SearchSnippet, searchSnippetAround } from "./view/search-snippet.ts";
export { type SearchPart, type SearchPartKind, sessionSearchParts } from "./view/session-search.ts";
export { estimateReclaim, type ReclaimEstimate } from "./view/reclaim-estimate.ts";
export { buildSessionView, type CallView, type ChainView, type CompactionView, type ReclaimTotals, type SessionView, type SummaryView } from "./view/session-view.ts";
export { renderedCounts, renderFidelity, writerHeaderLines } from "./view/session-writer.ts";
export { spillCopyOnBranch, spillRecovery } from "./view/spill-recovery.ts";
export { branchPointsOf, type Timeline, TimelineBuilder, type TimelineMark, type TimelinePoint } from "./view/timeline.ts";
export { appendToSessionView } from "./view/view-append.ts";
export { type DiagnosticView } from "./view/writer-diagnostics.ts";
