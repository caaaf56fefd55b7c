// aedes-persistence-level ships no types. Only the factory that the embedded broker calls is
// declared; the returned object is handed to aedes untouched (AedesOptions.persistence is `any`).
declare module 'aedes-persistence-level' {
  import type { Level } from 'level';

  export interface LevelPersistence {
    /** Closes the underlying level DB. */
    destroy(): Promise<void>;
  }

  function aedesPersistenceLevel(db: Level<string, Buffer>): LevelPersistence;
  export default aedesPersistenceLevel;
}
