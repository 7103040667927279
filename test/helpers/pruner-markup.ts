// The pruner's own markup in what a model is sent, read the way a model would read it, stated
// independently of core's escaping.

/**
 * Every open and close of the pruner's tags in `text`, in order (`compressed-chain`,
 * `/compressed-chain`, …): any case, spaces allowed after `<` and around the slash.
 */
export function prunerTags(text: string): string[] {
  return [...text.matchAll(/<\s*(\/?)\s*(compressed-chain|protected-outputs?|context-shrunk)(?![\w-])/gi)].map((m) => `${m[1]}${m[2]!.toLowerCase()}`);
}
