import { Type } from "typebox";

export const NewPlantBody = Type.Object({
  id: Type.Integer({ format: "int64" }),
  name: Type.String(),
  tag: Type.Optional(Type.String()),
});

export const PlantReply = Type.Object({ name: Type.String(), tag: Type.Optional(Type.String()) });

/** The sample endpoint's flat error body. */
export const PlantErrorReply = Type.Object({
  error: Type.Integer({ format: "int32" }),
  message: Type.String(),
});
