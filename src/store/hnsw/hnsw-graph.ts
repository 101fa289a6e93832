import type { VectorMetric } from '../vector-contract.js';
import { Heap } from './hnsw-heap.js';

/**
 * A Hierarchical Navigable Small World graph (Malkov & Yashunin, 2016; arXiv:1603.09320): each vector is a node on
 * layer 0 and, with probability 1/M per layer, on the layers above; a search descends greedily from the top
 * layer's entry point, then runs a beam search of width `ef` on layer 0. Neighbours are chosen by the paper's
 * heuristic (algorithm 4): a candidate is linked only when it is closer to the new node than to any neighbour
 * already chosen, which keeps the graph navigable across clusters.
 *
 * Memory: vectors in Float32Array blocks of BLOCK_ROWS rows (never one array copied whole when it grows), layer 0's
 * links in Int32Array blocks of (2M + 1) slots per node (a count, then the links), the few upper layers' links per
 * node in a map. `bytes` is what it holds.
 *
 * Everything here is synchronous and small: one `add` costs ~efConstruction × 2M distance computations (~0.3-1 ms
 * at 384 dimensions); the caller (`hnsw-indexes.ts`) adds nodes in slices, yielding to the event loop in between.
 * Nodes are never removed: `kill` marks one dead (a tombstone) and searches skip it; the graph is rebuilt when the
 * dead pass a share of it.
 */

export interface HnswParams {
  /** Links per node on the upper layers (2M on layer 0). */
  m: number;
  /** The beam width while adding a node. */
  efConstruction: number;
  /** The beam width of a search (raised to k when k is larger). */
  efSearch: number;
}

export const HNSW_DEFAULTS: HnswParams = { m: 16, efConstruction: 64, efSearch: 128 };

const BLOCK_SHIFT = 10;
/** Rows per vector block (and per layer-0 links block). */
export const BLOCK_ROWS = 1 << BLOCK_SHIFT;
const BLOCK_MASK = BLOCK_ROWS - 1;
/** No node is put above this layer (1/16^16: never reached in practice). */
const MAX_LEVEL = 16;

/** A node a search found: its distance (lower is closer) and the value `similarityScore` takes. */
export interface GraphHit {
  node: number;
  distance: number;
}

/**
 * What a graph of `nodes` nodes holds (as `HnswGraph.bytes` counts it), for the memory bound before it is built:
 * whole blocks of vectors, norms and layer-0 links; per node of capacity its id, file, level, tombstone and visit
 * mark; the upper layers' links (1/M of the nodes on layer 1, 1/M² on layer 2...).
 */
export function graphBytes(nodes: number, dimension: number, m: number): number {
  const blocks = Math.ceil(nodes / BLOCK_ROWS);
  let capacity = 1024;
  while (capacity < nodes) capacity *= 2;
  const upper = Math.ceil(nodes / (m - 1)) * ((m + 1) * 4 + 16);
  return blocks * BLOCK_ROWS * (dimension * 4 + 4 + (2 * m + 1) * 4) + capacity * 18 + upper;
}

export class HnswGraph {
  readonly m: number;
  readonly m0: number;
  private readonly mL: number;
  private readonly vectors: Float32Array[] = [];
  private readonly norms: Float32Array[] = [];
  private readonly layer0: Int32Array[] = [];
  private readonly upper = new Map<number, Int32Array[]>();
  private ids = new Float64Array(1024);
  private fileOf = new Int32Array(1024);
  private levels = new Uint8Array(1024);
  private dead = new Uint8Array(1024);
  private visited = new Uint32Array(1024);
  private visitMark = 0;
  private entry = -1;
  private topLevel = -1;
  size = 0;
  deadCount = 0;
  private upperBytes = 0;

  constructor(
    readonly dimension: number,
    readonly metric: VectorMetric,
    readonly params: HnswParams = HNSW_DEFAULTS,
    private readonly random: () => number = Math.random,
  ) {
    this.m = params.m;
    this.m0 = params.m * 2;
    this.mL = 1 / Math.log(params.m);
  }

  get live(): number {
    return this.size - this.deadCount;
  }

  get bytes(): number {
    const rows = this.vectors.length * BLOCK_ROWS;
    return (
      rows * (this.dimension * 4 + 4 + (this.m0 + 1) * 4) +
      this.ids.byteLength +
      this.fileOf.byteLength +
      this.levels.byteLength +
      this.dead.byteLength +
      this.visited.byteLength +
      this.upperBytes
    );
  }

  chunkId(node: number): number {
    return this.ids[node]!;
  }

  file(node: number): number {
    return this.fileOf[node]!;
  }

  isDead(node: number): boolean {
    return this.dead[node] === 1;
  }

  /** The node's vector (a view into its block: copy it to keep it past the graph). */
  vector(node: number): Float32Array {
    const at = (node & BLOCK_MASK) * this.dimension;
    return this.vectors[node >>> BLOCK_SHIFT]!.subarray(at, at + this.dimension);
  }

  kill(node: number): void {
    if (this.dead[node] === 1) return;
    this.dead[node] = 1;
    this.deadCount++;
  }

  /** Adds a vector (of `dimension`) as a node; returns its number. */
  add(chunkId: number, file: number, vector: Float32Array): number {
    const node = this.store(chunkId, file, vector);
    const level = Math.min(MAX_LEVEL, Math.floor(-Math.log(1 - this.random()) * this.mL));
    this.levels[node] = level;
    for (let l = 1; l <= level; l++) this.linksAt(node, l);
    if (this.entry < 0) {
      this.entry = node;
      this.topLevel = level;
      return node;
    }
    const q = this.vector(node);
    const qNorm = this.normOf(node);
    let ep = this.entry;
    let epDistance = this.distanceTo(q, qNorm, ep);
    for (let l = this.topLevel; l > level; l--) [ep, epDistance] = this.greedy(q, qNorm, ep, epDistance, l);
    for (let l = Math.min(level, this.topLevel); l >= 0; l--) {
      const found = this.searchLayer({
        q,
        qNorm,
        entries: [ep],
        distances: [epDistance],
        ef: this.params.efConstruction,
        level: l,
      });
      const max = l === 0 ? this.m0 : this.m;
      const chosen = this.selectNeighbours(found, max);
      this.setLinks(node, l, chosen);
      for (const neighbour of chosen) this.linkBack(neighbour, node, l, max);
      ep = found[0]!.node;
      epDistance = found[0]!.distance;
    }
    if (level > this.topLevel) {
      this.entry = node;
      this.topLevel = level;
    }
    return node;
  }

  /**
   * The `k` nodes closest to `q` that `accept` takes (dead nodes never), best first: greedy descent to layer 1,
   * then a beam of width max(ef, k) on layer 0 that walks through refused nodes but keeps only accepted ones.
   */
  search(q: Float32Array, k: number, ef: number, accept?: (node: number) => boolean): GraphHit[] {
    if (this.entry < 0 || k < 1) return [];
    let sum = 0;
    for (let i = 0; i < q.length; i++) sum += q[i]! * q[i]!;
    const qNorm = Math.sqrt(sum);
    let ep = this.entry;
    let epDistance = this.distanceTo(q, qNorm, ep);
    for (let l = this.topLevel; l > 0; l--) [ep, epDistance] = this.greedy(q, qNorm, ep, epDistance, l);
    const keep = (node: number) => this.dead[node] !== 1 && (accept === undefined || accept(node));
    const found = this.searchLayer({
      q,
      qNorm,
      entries: [ep],
      distances: [epDistance],
      ef: Math.max(ef, k),
      level: 0,
      keep,
    });
    return found.slice(0, k);
  }

  /**
   * The value `similarityScore` takes for `q` against a node, computed as the exact scan computes it
   * (`vector-scan.ts` `scoreBlock`, same operations in the same order): cosine dot / (|q| |v|), dot the product,
   * euclidean the distance.
   */
  scoreValue(q: Float32Array, node: number): number {
    const vectors = this.vectors[node >>> BLOCK_SHIFT]!;
    const base = (node & BLOCK_MASK) * this.dimension;
    if (this.metric === 'euclidean') {
      let squares = 0;
      for (let j = 0; j < this.dimension; j++) {
        const d = q[j]! - vectors[base + j]!;
        squares += d * d;
      }
      return Math.sqrt(squares);
    }
    let dot = 0;
    for (let j = 0; j < this.dimension; j++) dot += q[j]! * vectors[base + j]!;
    if (this.metric === 'dot') return dot;
    let sum = 0;
    for (const x of q) sum += x * x;
    const norms = Math.sqrt(sum) * this.normOf(node);
    return norms === 0 ? 0 : dot / norms;
  }

  private store(chunkId: number, file: number, vector: Float32Array): number {
    const node = this.size;
    if (node >= this.ids.length) this.grow(this.ids.length * 2);
    const block = node >>> BLOCK_SHIFT;
    if (block === this.vectors.length) {
      this.vectors.push(new Float32Array(BLOCK_ROWS * this.dimension));
      this.norms.push(new Float32Array(BLOCK_ROWS));
      this.layer0.push(new Int32Array(BLOCK_ROWS * (this.m0 + 1)));
    }
    const at = (node & BLOCK_MASK) * this.dimension;
    const target = this.vectors[block]!;
    let sum = 0;
    for (let i = 0; i < this.dimension; i++) {
      const x = vector[i]!;
      target[at + i] = x;
      // As the exact scan computes norms: from the Float32 values, summed in float64, kept as Float32.
      sum += target[at + i]! * target[at + i]!;
    }
    this.norms[block]![node & BLOCK_MASK] = Math.sqrt(sum);
    this.ids[node] = chunkId;
    this.fileOf[node] = file;
    this.size++;
    return node;
  }

  private grow(capacity: number): void {
    const copy = <T extends Float64Array | Int32Array | Uint8Array | Uint32Array>(from: T, to: T): T => {
      to.set(from);
      return to;
    };
    this.ids = copy(this.ids, new Float64Array(capacity));
    this.fileOf = copy(this.fileOf, new Int32Array(capacity));
    this.levels = copy(this.levels, new Uint8Array(capacity));
    this.dead = copy(this.dead, new Uint8Array(capacity));
    this.visited = copy(this.visited, new Uint32Array(capacity));
  }

  private normOf(node: number): number {
    return this.norms[node >>> BLOCK_SHIFT]![node & BLOCK_MASK]!;
  }

  /** Lower is closer: 1 - cos, minus the product, or the squared euclidean distance (loops unrolled by 4). */
  private distanceTo(q: Float32Array, qNorm: number, node: number): number {
    const v = this.vectors[node >>> BLOCK_SHIFT]!;
    const base = (node & BLOCK_MASK) * this.dimension;
    const d = this.dimension;
    const end = d - (d & 3);
    if (this.metric === 'euclidean') {
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let j = 0;
      for (; j < end; j += 4) {
        const a = q[j]! - v[base + j]!;
        const b = q[j + 1]! - v[base + j + 1]!;
        const c = q[j + 2]! - v[base + j + 2]!;
        const e = q[j + 3]! - v[base + j + 3]!;
        s0 += a * a;
        s1 += b * b;
        s2 += c * c;
        s3 += e * e;
      }
      for (; j < d; j++) {
        const a = q[j]! - v[base + j]!;
        s0 += a * a;
      }
      return s0 + s1 + s2 + s3;
    }
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let j = 0;
    for (; j < end; j += 4) {
      s0 += q[j]! * v[base + j]!;
      s1 += q[j + 1]! * v[base + j + 1]!;
      s2 += q[j + 2]! * v[base + j + 2]!;
      s3 += q[j + 3]! * v[base + j + 3]!;
    }
    for (; j < d; j++) s0 += q[j]! * v[base + j]!;
    const dot = s0 + s1 + s2 + s3;
    if (this.metric === 'dot') return -dot;
    const norms = qNorm * this.normOf(node);
    return norms === 0 ? 1 : 1 - dot / norms;
  }

  private between(a: number, b: number): number {
    return this.distanceTo(this.vector(a), this.normOf(a), b);
  }

  /** The links array of a node at a level, and where its slots start (slot 0: the count). */
  private linksAt(node: number, level: number): Int32Array {
    if (level === 0) return this.layer0[node >>> BLOCK_SHIFT]!;
    let layers = this.upper.get(node);
    if (!layers) {
      layers = [];
      this.upper.set(node, layers);
    }
    let links = layers[level - 1];
    if (!links) {
      links = new Int32Array(this.m + 1);
      layers[level - 1] = links;
      this.upperBytes += links.byteLength + 16;
    }
    return links;
  }

  private linkBase(node: number, level: number): number {
    return level === 0 ? (node & BLOCK_MASK) * (this.m0 + 1) : 0;
  }

  private setLinks(node: number, level: number, chosen: readonly number[]): void {
    const links = this.linksAt(node, level);
    const base = this.linkBase(node, level);
    links[base] = chosen.length;
    for (let i = 0; i < chosen.length; i++) links[base + 1 + i] = chosen[i]!;
  }

  /** Links `node` from `neighbour`; a full neighbour keeps the best `max` of its links and the new one (heuristic). */
  private linkBack(neighbour: number, node: number, level: number, max: number): void {
    const links = this.linksAt(neighbour, level);
    const base = this.linkBase(neighbour, level);
    const count = links[base]!;
    if (count < max) {
      links[base + 1 + count] = node;
      links[base] = count + 1;
      return;
    }
    const candidates: GraphHit[] = [{ node, distance: this.between(neighbour, node) }];
    for (let i = 0; i < count; i++) {
      const other = links[base + 1 + i]!;
      candidates.push({ node: other, distance: this.between(neighbour, other) });
    }
    candidates.sort((a, b) => a.distance - b.distance);
    this.setLinks(neighbour, level, this.selectNeighbours(candidates, max));
  }

  /** The paper's heuristic over candidates sorted closest first: keep one only when no kept one is closer to it. */
  private selectNeighbours(sorted: readonly GraphHit[], max: number): number[] {
    const chosen: number[] = [];
    for (const candidate of sorted) {
      if (chosen.length >= max) break;
      let diverse = true;
      for (const kept of chosen) {
        if (this.between(candidate.node, kept) < candidate.distance) {
          diverse = false;
          break;
        }
      }
      if (diverse) chosen.push(candidate.node);
    }
    return chosen;
  }

  /** One step down a layer: moves to a closer neighbour while there is one. */
  private greedy(q: Float32Array, qNorm: number, ep: number, epDistance: number, level: number): [number, number] {
    let best = ep;
    let bestDistance = epDistance;
    for (let changed = true; changed;) {
      changed = false;
      const links = this.linksAt(best, level);
      const base = this.linkBase(best, level);
      const count = links[base]!;
      for (let i = 0; i < count; i++) {
        const next = links[base + 1 + i]!;
        const distance = this.distanceTo(q, qNorm, next);
        if (distance < bestDistance) {
          best = next;
          bestDistance = distance;
          changed = true;
        }
      }
    }
    return [best, bestDistance];
  }

  /**
   * The beam search of one layer (the paper's algorithm 2): candidates in a min-heap, the `ef` best kept nodes in a
   * max-heap; stops when the closest candidate is farther than the worst kept one while `ef` are kept. Returns the
   * kept nodes closest first, ties by chunk id.
   */
  private searchLayer(s: {
    q: Float32Array;
    qNorm: number;
    entries: number[];
    distances: number[];
    ef: number;
    level: number;
    keep?: (node: number) => boolean;
  }): GraphHit[] {
    const mark = this.nextMark();
    const candidates = new Heap(false);
    const kept = new Heap(true);
    for (let i = 0; i < s.entries.length; i++) {
      const node = s.entries[i]!;
      this.visited[node] = mark;
      candidates.push(node, s.distances[i]!);
      if (!s.keep || s.keep(node)) kept.push(node, s.distances[i]!);
    }
    while (candidates.size > 0) {
      const distance = candidates.topDistance();
      if (kept.size >= s.ef && distance > kept.topDistance()) break;
      const current = candidates.pop();
      const links = this.linksAt(current, s.level);
      const base = this.linkBase(current, s.level);
      const count = links[base]!;
      for (let i = 0; i < count; i++) {
        const next = links[base + 1 + i]!;
        if (this.visited[next] === mark) continue;
        this.visited[next] = mark;
        const nextDistance = this.distanceTo(s.q, s.qNorm, next);
        if (kept.size < s.ef || nextDistance < kept.topDistance()) {
          candidates.push(next, nextDistance);
          if (!s.keep || s.keep(next)) {
            kept.push(next, nextDistance);
            if (kept.size > s.ef) kept.pop();
          }
        }
      }
    }
    const hits: GraphHit[] = [];
    while (kept.size > 0) {
      const distance = kept.topDistance();
      hits.push({ node: kept.pop(), distance });
    }
    hits.reverse();
    return hits.sort((a, b) => a.distance - b.distance || this.ids[a.node]! - this.ids[b.node]!);
  }

  private nextMark(): number {
    this.visitMark = (this.visitMark + 1) >>> 0;
    if (this.visitMark === 0) {
      this.visited.fill(0);
      this.visitMark = 1;
    }
    return this.visitMark;
  }
}
