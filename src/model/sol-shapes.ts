/**
 * Shapes that differ between SOL 2.6.1 (API v1) and SOL 3.x (API v2) in what the VNFM sends,
 * shared by the API responses (src/api/vnflcm/converters.ts) and the notifications
 * (src/notify/notifier.ts), so both always say the same.
 */

/** SOL 2.6.1 AffectedVirtualLink names the descriptor `virtualLinkDescId` where 3.x says `vnfVirtualLinkDescId`. */
export function affectedVirtualLinksToV1(links: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return links.map(({ vnfVirtualLinkDescId, ...l }) => ({ ...l, virtualLinkDescId: vnfVirtualLinkDescId }));
}

/** resourceChanges of an op occ in the v1 shape. */
export function resourceChangesToV1(rc: Record<string, unknown> | null): Record<string, unknown> | null {
  if (!rc || !Array.isArray(rc.affectedVirtualLinks)) return rc;
  return { ...rc, affectedVirtualLinks: affectedVirtualLinksToV1(rc.affectedVirtualLinks as Record<string, unknown>[]) };
}
