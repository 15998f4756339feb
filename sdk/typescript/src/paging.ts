/**
 * Every item of a listing, page after page: `fetchPage(cursor)` gets one page (the first
 * with `undefined`), `items` takes its items and `next` its cursor (`next_cursor`; none on
 * the last page). Pages are fetched as the loop asks for them.
 */
export async function* paginate<Page, Item>(
  fetchPage: (cursor: string | undefined) => Promise<Page>,
  items: (page: Page) => Item[],
  next: (page: Page) => string | null | undefined,
): AsyncGenerator<Item, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* items(page);
    cursor = next(page) ?? undefined;
  } while (cursor !== undefined);
}
