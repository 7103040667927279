// Every command id of the extension, in one place. Each command is declared once in package.json
// (with its title, icon and menus) and registered under the same id; the ids here must match it.

export const REFRESH_COMMAND = "piPruner.refresh";
export const OPEN_DOCUMENT_COMMAND = "piPruner.openDocument";
export const REVIEW_CHAIN_COMMAND = "piPruner.reviewChain";
export const CHOOSE_BRANCH_COMMAND = "piPruner.chooseBranch";
export const OPEN_SESSION_FILE_COMMAND = "piPruner.openSessionFile";
export const SHOW_ALL_SESSIONS_COMMAND = "piPruner.showAllSessions";
export const SHOW_WORKSPACE_SESSIONS_COMMAND = "piPruner.showWorkspaceSessions";

export const ADD_TO_PROTECTED_PATHS_COMMAND = "piPruner.addToProtectedPaths";
export const REMOVE_FROM_PROTECTED_PATHS_COMMAND = "piPruner.removeFromProtectedPaths";

export const SHOW_MODEL_VIEW_COMMAND = "piPruner.showModelView";
export const GO_TO_REQUEST_COMMAND = "piPruner.goToRequest";
export const NEXT_REQUEST_COMMAND = "piPruner.nextRequest";
export const PREVIOUS_REQUEST_COMMAND = "piPruner.previousRequest";
export const COMPARE_WITH_PREVIOUS_REQUEST_COMMAND = "piPruner.compareWithPreviousRequest";
export const EXPORT_SESSION_COMMAND = "piPruner.exportSession";
export const SESSIONS_THAT_READ_FILE_COMMAND = "piPruner.sessionsThatReadFile";
export const SHOW_TIMELINE_COMMAND = "piPruner.showTimeline";

export const SEARCH_COMMAND = "piPruner.searchSessions";
export const CLEAR_SEARCH_COMMAND = "piPruner.clearSearch";
export const OPEN_SEARCH_RESULT_COMMAND = "piPruner.openSearchResult";

/** Every command the extension registers, as package.json contributes them. */
export const COMMAND_IDS: readonly string[] = [
  REFRESH_COMMAND,
  SHOW_MODEL_VIEW_COMMAND,
  SHOW_TIMELINE_COMMAND,
  GO_TO_REQUEST_COMMAND,
  PREVIOUS_REQUEST_COMMAND,
  NEXT_REQUEST_COMMAND,
  COMPARE_WITH_PREVIOUS_REQUEST_COMMAND,
  REVIEW_CHAIN_COMMAND,
  CHOOSE_BRANCH_COMMAND,
  OPEN_SESSION_FILE_COMMAND,
  OPEN_DOCUMENT_COMMAND,
  ADD_TO_PROTECTED_PATHS_COMMAND,
  REMOVE_FROM_PROTECTED_PATHS_COMMAND,
  SHOW_ALL_SESSIONS_COMMAND,
  SHOW_WORKSPACE_SESSIONS_COMMAND,
  SESSIONS_THAT_READ_FILE_COMMAND,
  EXPORT_SESSION_COMMAND,
  SEARCH_COMMAND,
  CLEAR_SEARCH_COMMAND,
  OPEN_SEARCH_RESULT_COMMAND,
];

/** VS Code's own command that focuses the Search Results view (made for every contributed view). */
export const FOCUS_SEARCH_VIEW_COMMAND = "piPruner.search.focus";
