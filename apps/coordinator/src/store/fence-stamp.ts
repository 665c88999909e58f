/**
 * Which decision a fence write carries: the group's incarnation (`createdAt`), version and commit
 * identity (`commitId`).
 */
export interface FenceStamp {
  readonly incarnation: number;
  readonly version: number;
  readonly commitId: string;
}
