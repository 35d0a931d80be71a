// Doubly linked list of free KV block ids in eviction order (head = evicted first).
// O(1) removal from the middle is what prefix caching needs: a cached block that is
// free can be "touched" by a new request and must leave the queue without a scan.

const NONE = -1;

export class FreeBlockQueue {
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private readonly inQueue: Uint8Array;
  private head = NONE;
  private tail = NONE;
  private count = 0;

  constructor(numBlocks: number) {
    this.prev = new Int32Array(numBlocks).fill(NONE);
    this.next = new Int32Array(numBlocks).fill(NONE);
    this.inQueue = new Uint8Array(numBlocks);
    for (let id = 0; id < numBlocks; id++) this.pushBack(id);
  }

  get length(): number {
    return this.count;
  }

  has(id: number): boolean {
    return this.inQueue[id] === 1;
  }

  pushBack(id: number): void {
    this.link(id, this.tail, NONE);
  }

  pushFront(id: number): void {
    this.link(id, NONE, this.head);
  }

  popFront(): number {
    const id = this.head;
    if (id === NONE) throw new Error('no free KV block');
    this.remove(id);
    return id;
  }

  remove(id: number): void {
    if (!this.inQueue[id]) throw new Error(`KV block ${id} is not free`);
    const p = this.prev[id];
    const n = this.next[id];
    if (p === NONE) this.head = n;
    else this.next[p] = n;
    if (n === NONE) this.tail = p;
    else this.prev[n] = p;
    this.prev[id] = NONE;
    this.next[id] = NONE;
    this.inQueue[id] = 0;
    this.count--;
  }

  private link(id: number, before: number, after: number): void {
    if (this.inQueue[id]) throw new Error(`KV block ${id} is already free`);
    this.prev[id] = before;
    this.next[id] = after;
    if (before === NONE) this.head = id;
    else this.next[before] = id;
    if (after === NONE) this.tail = id;
    else this.prev[after] = id;
    this.inQueue[id] = 1;
    this.count++;
  }
}
