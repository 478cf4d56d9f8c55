import { Type } from "typebox";

export const NewPlantBody = Type.Object(
  {
    id: Type.Integer({ format: "int64" }),
    name: Type.String(),
    tag: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const PlantReply = Type.Object(
  { name: Type.String(), tag: Type.Optional(Type.String()) },
  { $id: "Plant", description: "The sample resource" },
);

/** The sample endpoint's flat error body. */
export const PlantErrorReply = Type.Object(
  {
    error: Type.Integer({ format: "int32", description: "The HTTP status" }),
    message: Type.String(),
  },
  { $id: "PlantError", description: "The sample endpoint's flat error body (not the API's Error envelope)" },
);
