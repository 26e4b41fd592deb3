// A spy on a store's statements for the search tests (search-fields, search-large): every
// statement's `all(...)` call is reported with its SQL and arguments, through a proxy that
// keeps `pluck()` / `raw()` chaining on it; the store's own `stmt` is given back by the
// returned function.
import type { IndexStore } from '../../src/store/store.js';

/** Report each `all(...args)` of the store's statements to `onAll(sql, args)`; returns the
 *  function that restores the store's `stmt`. */
export function spyStatements(store: IndexStore, onAll: (sql: string, args: unknown[]) => void): () => void {
  const stmt = store.stmt.bind(store);
  store.stmt = (sql: string) => {
    const st = stmt(sql);
    const proxy: typeof st = new Proxy(st, {
      get(t, k) {
        if (k === 'pluck' || k === 'raw')
          return (...a: unknown[]) => {
            (t[k] as (...x: unknown[]) => unknown)(...a);
            return proxy;
          };
        if (k === 'all')
          return (...a: unknown[]) => {
            onAll(sql, a);
            return t.all(...a);
          };
        const v = Reflect.get(t, k, t);
        return typeof v === 'function' ? v.bind(t) : v;
      },
    });
    return proxy;
  };
  return () => {
    store.stmt = stmt;
  };
}
